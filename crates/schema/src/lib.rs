//! The contract between the Python layer and the engines (docs/engine-interface.md),
//! written once: the resolved scenario an engine reads, with one numeric type per
//! field (integers for rates in bit/s and times in ns) and its validation
//! ([`scenario::Scenario::check`]). The simulator and the emulator both read it
//! through [`scenario::Scenario::from_json`] and keep only what is their own.
//! [`result`] holds the raw result's shared pieces (the distribution summary),
//! [`series`] its time-series tables (as Arrow record batches with the `arrow` feature).
//! [`language`] is the TOML scenario language users write, read and resolved into
//! that scenario. [`pcap`] is the capture file both engines write (`--pcap DIR`), [`wire`] the
//! address and port plan they share and the headers the simulator writes there.

pub mod language;
pub mod pcap;
pub mod result;
pub mod scenario;
pub mod series;
pub mod wire;
