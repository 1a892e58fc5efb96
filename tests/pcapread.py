"""A small reader of the engines' captures (``--pcap DIR``: classic pcap,
nanosecond timestamps, raw IPv4, headers only; crates/schema/src/pcap.rs),
with ``struct`` only, for the tests."""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass
class Pkt:
    t: float  # s since the epoch of the file (the simulator's: the scenario's t = 0)
    orig_len: int
    hdr: bytes  # the captured bytes: IPv4 and TCP/UDP headers
    proto: int
    src: str
    dst: str
    sport: int
    dport: int
    tos: int
    # TCP only (0 otherwise)
    seq: int = 0
    ack: int = 0
    flags: int = 0
    window: int = 0
    payload: int = 0  # bytes of TCP payload (from the IP length)
    options: bytes = b""


def ip_checksum_ok(hdr: bytes) -> bool:
    ihl = (hdr[0] & 15) * 4
    s = sum(struct.unpack(f"!{ihl // 2}H", hdr[:ihl]))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def read(path) -> list[Pkt]:
    b = open(path, "rb").read()
    magic, _, _, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", b, 0)
    assert magic == 0xA1B23C4D and linktype == 101, (hex(magic), linktype)
    out, i = [], 24
    while i + 16 <= len(b):
        sec, ns, incl, orig = struct.unpack_from("<IIII", b, i)
        h = b[i + 16:i + 16 + incl]
        i += 16 + incl
        ihl = (h[0] & 15) * 4
        tot = struct.unpack_from("!H", h, 2)[0]
        p = Pkt(t=sec + ns / 1e9, orig_len=orig, hdr=h, proto=h[9], src=".".join(map(str, h[12:16])),
                dst=".".join(map(str, h[16:20])), sport=0, dport=0, tos=h[1])
        assert tot == orig, (tot, orig)
        if p.proto in (6, 17):
            p.sport, p.dport = struct.unpack_from("!HH", h, ihl)
        if p.proto == 6:
            p.seq, p.ack, off, p.flags, p.window = struct.unpack_from("!IIBBH", h, ihl + 4)
            doff = (off >> 4) * 4
            p.options = h[ihl + 20:ihl + doff]
            p.payload = tot - ihl - doff
        out.append(p)
    assert i == len(b), "a record runs past the end of the file"
    return out


def tcp_options(opts: bytes) -> dict:
    """{kind: value bytes} of a TCP options field (NOP and EOL skipped)."""
    out, i = {}, 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        n = opts[i + 1]
        out[k] = opts[i + 2:i + n]
        i += n
    return out
