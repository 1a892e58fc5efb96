//! TCP endpoints: a sender with Linux's loss recovery around a pluggable
//! congestion control, a receiver with Linux's ACK policy and receive window
//! (`rcvwin`: the advertised window and receive-buffer autotuning), and the
//! handshake and request that come before the data.
//!
//! The sender is split the way Linux splits it (see `sender.rs`):
//! `scoreboard` and `recovery` (tcp_input.c), `rack` (tcp_recovery.c),
//! `rate` (tcp_rate.c), `timer` (tcp_timer.c), `output` (tcp_output.c),
//! `undo` (tcp_input.c's undo and F-RTO).
pub mod handshake;
mod output;
mod rack;
mod rate;
pub mod rcvwin;
pub mod receiver;
mod recovery;
pub mod rtt;
mod scoreboard;
pub mod sender;
mod timer;
mod undo;
