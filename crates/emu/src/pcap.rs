//! A pcap file writer (the classic libpcap format, nanosecond variant) for the
//! packets a link direction carries. Link type 101 (LINKTYPE_RAW: the packet
//! starts with its IP header), which tcpdump and Wireshark open as is.
//!
//! Format: https://www.tcpdump.org/manpages/pcap-savefile.5.html — a 24-byte
//! file header (magic 0xa1b23c4d = ns timestamps), then per packet a 16-byte
//! record header (seconds, nanoseconds, captured length, original length).

use std::fs::File;
use std::io::{self, BufWriter, Write};

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;
/// Bytes kept per packet: the whole packet (an MTU-sized TUN never exceeds it).
const SNAPLEN: u32 = 65535;

pub struct Pcap {
    w: BufWriter<File>,
    /// Wall-clock time (ns since the Unix epoch) of the run's t = 0.
    base_ns: u64,
}

impl Pcap {
    pub fn create(path: &str, base_ns: u64) -> io::Result<Pcap> {
        let f = File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        w.write_all(&MAGIC_NS.to_le_bytes())?;
        w.write_all(&2u16.to_le_bytes())?; // version 2.4
        w.write_all(&4u16.to_le_bytes())?;
        w.write_all(&0i32.to_le_bytes())?; // thiszone
        w.write_all(&0u32.to_le_bytes())?; // sigfigs
        w.write_all(&SNAPLEN.to_le_bytes())?;
        w.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(Pcap { w, base_ns })
    }

    /// Record `pkt` seen at `t_ns` (nanoseconds since the run started).
    pub fn write(&mut self, t_ns: u64, pkt: &[u8]) -> io::Result<()> {
        let t_ns = self.base_ns + t_ns;
        let cap = pkt.len().min(SNAPLEN as usize);
        self.w.write_all(&((t_ns / 1_000_000_000) as u32).to_le_bytes())?;
        self.w.write_all(&((t_ns % 1_000_000_000) as u32).to_le_bytes())?;
        self.w.write_all(&(cap as u32).to_le_bytes())?;
        self.w.write_all(&(pkt.len() as u32).to_le_bytes())?;
        self.w.write_all(&pkt[..cap])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_file_with_one_packet_has_the_24_byte_header_and_one_16_byte_record() {
        let path = std::env::temp_dir().join(format!("bloatlab-emu-pcap-test-{}.pcap", std::process::id()));
        let p = path.to_str().unwrap();
        let mut w = Pcap::create(p, 0).unwrap();
        w.write(1_500_000_123, &[0x45u8; 40]).unwrap();
        w.flush().unwrap();
        drop(w);
        let b = std::fs::read(p).unwrap();
        std::fs::remove_file(p).unwrap();
        assert_eq!(b.len(), 24 + 16 + 40);
        assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), 0xa1b2_3c4d);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 101);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 500_000_123);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 40);
    }
}
