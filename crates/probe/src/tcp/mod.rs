//! TCP throughput: server, client, and the control protocol between them.
//!
//! Model (after iperf3, whose protocol `crate::iperf3` speaks too): the
//! client opens a *control* connection and sends the test parameters (an
//! opening a stock iperf3 server also takes for a test: `control`), then
//! opens `-P` *data* connections. The sender (client, or server
//! with `-R`) writes as fast as the socket takes for `-t` seconds or exactly
//! `-n` bytes, then waits until every byte is acked and shuts its write side
//! down. Meanwhile a sampler thread reads `TCP_INFO` of each sending socket
//! every `--info-interval`. When all streams are done the server sends its own
//! measurements back over the control connection, so the client's result
//! always describes the sending socket and the receiving application.
//!
//! Rooms, each depending only on those above it:
//! - [`stream`]: one data connection: its sender, receiver and `TCP_INFO`
//!   sampler, the byte counts (`bytes_acked`, goodput, fct), `connect()`;
//!   shared by both protocols (bloatlab's and iperf3's) and by `probewire`.
//! - [`control`]: bloatlab's control protocol (magics, the opening and its
//!   parameters, the challenge), the server's limits, and the test a client asks for and
//!   what it learns (`ClientCfg`, `ClientResult`), common to both protocols.
//! - [`server`]: the listener: classifies each connection (bloatlab control
//!   or data, iperf3, a foreign responsiveness probe) and runs the tests.
//! - [`client`]: bloatlab's client, its interval lines and its result.

pub mod client;
pub mod control;
pub mod server;
pub mod stream;

// the API the CLI, the load test and the tests use
pub use client::{output, print_summary, run_client, run_client_or_iperf3, Answer};
pub use control::{ClientCfg, ClientError, ClientResult, Params, ServerLimits, IPERF3_SERVER};
pub use server::{serve, serve_with};
pub use stream::APP_TICK_NS;
