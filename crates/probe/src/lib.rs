//! bloatlab-probe: measuring tools for real networks, and the traffic
//! generators the emulator runs inside its namespaces.
//!
//! Rooms:
//! - [`wire`]: the UDP echo packet format and its parser (fuzzed).
//! - [`udp`]: UDP request/response latency (server, client).
//! - [`train`]: packet trains server → client: a policer's port rate and bucket.
//! - [`train_up`]: packet trains client → server (`udp train --up`), with the same analysis.
//! - [`echo`]: UDP request/response against any echo server (`--echo`).
//! - [`tcp`]: TCP throughput with TCP_INFO series (`stream`, `control`, `server`, `client`).
//! - [`iperf3`]: iperf3's control protocol, client and server side.
//! - [`load`]: latency under load and responsiveness.
//! - [`live`]: a loaded phase's end decided while it runs (saturation).
//! - [`probewire`]: the responsiveness probes over bloatlab's own protocol (foreign and self).
//! - [`rpm`]: responsiveness (RPM), its confidence, the bufferbloat grade: arithmetic only.
//! - [`report`]: latency statistics, histogram, the common result schema.
//! - [`sys`]: clocks, signals, scheduling, socket options (the Linux layer).
//! - [`cli`]: the command line.

pub mod cli;
pub mod echo;
pub mod iperf3;
pub mod live;
pub mod load;
pub mod probewire;
pub mod report;
pub mod rpm;
pub mod sys;
pub mod tcp;
pub mod train;
pub mod train_up;
pub mod udp;
pub mod wire;
