//! TCP endpoints: a sender with Linux's loss recovery around a pluggable
//! congestion control, a receiver with Linux's ACK policy, and the
//! handshake and request that come before the data.
pub mod handshake;
pub mod receiver;
pub mod rtt;
pub mod sender;
