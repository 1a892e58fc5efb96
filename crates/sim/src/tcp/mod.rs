//! TCP endpoints: a sender with Linux's loss recovery around a pluggable
//! congestion control, and a receiver with Linux's ACK policy.
pub mod receiver;
pub mod rtt;
pub mod sender;
