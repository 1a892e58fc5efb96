//! Autorate: a CAKE shaper whose rate a controller steers from what it
//! measures, in front of a variable-rate bottleneck — cake-autorate's setup.
//!
//! - [`controller`]: cake-autorate's control loop (one direction), a pure
//!   state machine: OWD samples and achieved rates in, a shaper rate out.
//! - [`path`]: where it sits: [`path::ShapedPath`], CAKE at the controller's
//!   rate feeding the bottleneck's own queue (the modem's buffer), served by
//!   the link (a constant rate or a Mahimahi trace). A [`crate::qdisc::Qdisc`]
//!   to the link that owns it, so the simulator and the emulator run the same
//!   code through `qdisc::chain::build_bottleneck`.

pub mod controller;
pub mod path;

pub use controller::{Controller, Load, Params, Sss, CONNECTION_ACTIVE_THR_KBPS};
pub use path::{AutorateSpec, ShapedPath};
