//! bloatlab-emu: the userspace link emulator.
//!
//! Two network namespaces (client and server) joined by two TUN devices and
//! this process in between: per direction it reads the packets the kernel
//! sends, applies random loss, the core's qdisc emptied at the link rate (or
//! on a Mahimahi trace), and a per-flow propagation delay, and writes them to
//! the other side in real time. The TCP is the real kernel's
//! (`TCP_CONGESTION` per flow), driven by `bloatlab-probe`.
//!
//! Rooms: [`packet`] (IPv4 headers), [`gso`] (the TUN's virtio-net header,
//! GSO super-packets cut into wire segments), [`link`] (the model, clock as an
//! argument), [`forward`] (the real-time loop), [`ns`] (namespaces, slots,
//! clean-up), [`run`] (a whole run), [`supervise`] (its processes: the
//! traffic generators), [`result`] (its typed raw result), [`scenario`] (the
//! resolved scenario), [`stall`] (a link thread's stalls), [`sys`], [`wifi`] (the WiFi medium instead of
//! the two links). Mahimahi traces are read and served by `bloatlab_core::trace`,
//! as in the simulator; captures (`--pcap`) are written by `bloatlab_schema::pcap`,
//! as the simulator's.

pub mod forward;
pub mod gso;
pub mod link;
pub mod ns;
pub mod packet;
pub mod result;
pub mod run;
pub mod scenario;
pub mod stall;
pub mod supervise;
pub mod sys;
pub mod wifi;
