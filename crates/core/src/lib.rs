//! bloatlab-core: the part of bloatlab that does no I/O.
//!
//! Everything here takes `now` (integer nanoseconds, [`time::Nanos`]) and, where
//! randomness is needed, a caller-seeded [`rng::Rng`] as arguments. Nothing reads
//! a clock or a socket. That is what lets the simulator (virtual time) and the
//! emulator (real time) run the very same congestion-control and queue code.
//!
//! Rooms:
//! - [`autorate`]: cake-autorate's controller and the CAKE-before-a-variable-rate-bottleneck path it steers.
//! - [`cc`]: congestion controls (one file each) behind the [`cc::CongestionControl`] trait.
//! - [`qdisc`]: queues and AQMs (one file each) behind the [`qdisc::Qdisc`] trait.
//! - [`filter`]: estimators shared by algorithms (windowed min/max).
//! - [`kernel`]: the kernel's shared arithmetic (HZ, the jiffies clock, wrap-safe `after`).
//! - [`stats`]: percentiles and summaries used by every engine's result.
//! - [`trace`]: Mahimahi delivery traces (trace-driven link rates), for both engines.
//! - [`wifi`]: the WiFi link kind (airtime, contention, the MAC designs).

pub mod autorate;
pub mod cc;
pub mod filter;
pub mod kernel;
pub mod qdisc;
pub mod rng;
pub mod stats;
pub mod time;
pub mod trace;
pub mod units;
pub mod wifi;
