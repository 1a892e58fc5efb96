//! The tables of the scenario language (docs/scenario.md), one struct each:
//! its keys, their types (the checkers of [`super::check`]), their defaults
//! and their descriptions. serde reads a document into them (an unknown key,
//! a missing one or a bad value is an error at its key path), schemars writes
//! their JSON Schema (docs/schema/scenario-toml.schema.json). The rules that
//! need more than one value (a flow's stop after its start, buffers in BDPs,
//! the run's limits) are [`super::resolve`]'s.

use super::check::{self, BufferAmount, Check, LinkRate, Phy};
use bloatlab_core::time::Nanos;
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};

/// What one run may produce, checked before it starts (docs/scenario.md,
/// "Limits"): a run beyond one is refused naming the key that makes it so.
/// Sizes: a series row cost ~400 B on its way into pandas when this limit was
/// set (1000 flows x 1000 samples: 420 MB; Arrow series cost less today), so
/// 5 M rows is at most ~2 GB; the simulator moves
/// ~5-10 M packets per wall second, so 2e9 packets is several minutes.
pub const LIMITS: [(&str, u64); 4] = [
    ("max_flows", 10_000),            // connections after `count` is expanded
    ("max_series_rows", 5_000_000),   // (flows + 2 links) x duration / sample_interval
    ("max_probe_packets", 10_000_000), // sum of duration / interval over the probes
    ("max_packets", 2_000_000_000),   // full-size packets the bottlenecks can carry: rate x duration / 1500 B
];
pub const MAX_PAGE_OBJECTS: i128 = 1000;
pub const MAX_PAGE_CONNECTIONS: i128 = 64;
/// A browser opens 6 connections per host (RFC 7230 leaves it open; Chrome
/// and Firefox use 6); wget -p fetches one object at a time (connections = 1).
pub const PAGE_CONNECTIONS: u64 = 6;
pub const DIRECTIONS: [&str; 2] = ["down", "up"];
pub const PROBE_KINDS: [&str; 1] = ["udp"];
pub const WIFI_MACS: [&str; 3] = ["legacy", "fq", "airtime"];
/// A station's rate control (the core's `RateControl::NAMES`).
pub const RATE_CONTROLS: [&str; 2] = bloatlab_core::wifi::RateControl::NAMES;
/// The PLCP preamble of an 802.11b station (docs/wifi.md, "802.11b stations").
pub const PREAMBLES: [&str; 2] = ["long", "short"];
/// transperf's scores (google/transperf README "Testing Metrics"; python/bloatlab/study/expect.py computes them).
pub const EXPECT_CHECKS: [&str; 6] = ["tput", "rtt_med", "lock_on_bw", "loss_avoid", "fairness", "convergence_fairness"];
/// transperf's default_target_score()['convergence_sec'] (s)
pub const DEFAULT_CONVERGENCE_S: f64 = 4.0;

// ---------------------------------------------------------------- value types
// A value type keeps the value in base units and the TOML value as written
// (echoed in messages that need it, and the form a default takes in the schema).

macro_rules! value_type {
    ($(#[$m:meta])* $name:ident: $t:ty = $check:expr, $schema:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pub value: $t,
            pub raw: Value,
        }
        impl $name {
            #[allow(clippy::redundant_closure_call)]
            fn check(raw: &Value) -> Check<$t> {
                ($check)(raw)
            }
            /// A default, as the TOML file would write it.
            pub fn of(raw: Value) -> Self {
                let value = Self::check(&raw).expect("a default of the language is valid");
                $name { value, raw }
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = Value::deserialize(d)?;
                match Self::check(&raw) {
                    Ok(value) => Ok($name { value, raw }),
                    Err(m) => Err(D::Error::custom(m)),
                }
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.raw.serialize(s)
            }
        }
        impl JsonSchema for $name {
            fn schema_name() -> String {
                stringify!($name).into()
            }
            fn is_referenceable() -> bool {
                false
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                serde_json::from_value($schema).expect("a schema literal")
            }
        }
    };
}

fn s_duration() -> Value {
    json!({"type": "string", "description": "a duration: \"10ms\", \"1.5s\", \"2min\" (ns, us, ms, s, min)", "examples": ["10ms"]})
}
fn s_rate() -> Value {
    json!({"type": "string", "description": "a rate in bit/s, SI like tc: \"100Mbit\", \"1Gbit\", \"500Kbit\"", "examples": ["100Mbit"]})
}
fn s_size() -> Value {
    json!({"type": ["string", "integer"], "description": "a size in bytes, SI: \"375KB\", \"1.5MB\", \"64KiB\", or a whole number of bytes", "examples": ["64KB"]})
}
fn s_pkt_or_bytes() -> Value {
    json!({"type": ["string", "integer"], "description": "packets (\"1000pkt\") or bytes (\"1.5MB\")"})
}
fn s_choice(choices: &[&str]) -> Value {
    json!({"type": "string", "enum": choices})
}

value_type!(Text: String = check::string, json!({"type": "string"}));
value_type!(Bool: bool = check::boolean, json!({"type": "boolean"}));
value_type!(Duration: Nanos = check::duration, s_duration());
value_type!(PositiveDuration: Nanos = check::positive_duration, s_duration());
value_type!(Size: u64 = check::size, s_size());
value_type!(PositiveSize: u64 = check::positive_size, s_size());
value_type!(PositiveRate: u64 = check::rate, s_rate());
value_type!(Rate: u64 = check::rate, s_rate());
value_type!(Buffer: BufferAmount = check::buffer, json!({"type": ["string", "integer"], "description": "bytes (\"375KB\"), packets (\"1000pkt\") or bandwidth-delay products (\"1bdp\")", "examples": ["1bdp"]}));
value_type!(Loss: f64 = check::loss, json!({"type": ["string", "number"], "description": "a drop probability: \"1%\" or a fraction below 1 like 0.01", "examples": ["1%"]}));
value_type!(Dscp: u8 = check::dscp, json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 63},
    {"type": "string", "enum": dscp_enum()}], "description": "a DiffServ code point: 0-63 or a name (EF, CS0-CS7, AF11-AF43, VA, LE, BE)"}));
value_type!(Direction: String = |v| check::choice(v, &DIRECTIONS), s_choice(&DIRECTIONS));
value_type!(Cc: String = |v| check::choice(v, &bloatlab_core::cc::names()),
    json!({"type": "string", "description": "a congestion control of the simulator", "enum": bloatlab_core::cc::names()}));
value_type!(ProbeKind: String = |v| check::choice(v, &PROBE_KINDS), s_choice(&PROBE_KINDS));
value_type!(WifiMac: String = |v| check::choice(v, &WIFI_MACS), s_choice(&WIFI_MACS));
value_type!(Qdisc: String = |v| check::choice(v, &bloatlab_core::qdisc::names()), s_choice(&bloatlab_core::qdisc::names()));
value_type!(OnPeriod: Nanos = |v| check::app_period(v, true), s_duration());
value_type!(OffPeriod: Nanos = |v| check::app_period(v, false), s_duration());
value_type!(LinkRateT: LinkRate = check::link_rate,
    json!({"type": "string", "description": "the bottleneck rate (\"100Mbit\") or \"trace:FILE\" (a Mahimahi trace)"}));
value_type!(DeviceQueue: BufferAmount = |v| check::buffer_no_bdp(v, "\"2pkt\" or \"3000B\""), s_pkt_or_bytes());
value_type!(WifiBuffer: BufferAmount = |v| check::buffer_no_bdp(v, "\"1000pkt\" or \"1.5MB\""), s_pkt_or_bytes());
value_type!(ProbeSize: u64 = check::probe_size, s_size());
value_type!(TrainSize: u64 = check::train_size, s_size());
value_type!(BurstSize: u64 = check::burst_size, s_size());
value_type!(ObjectSize: u64 = check::object_size, s_size());
value_type!(StationPhy: Phy = check::station_phy,
    json!({"type": "string", "description": "a PHY rate like \"144.4Mbit\", an HT MCS \"mcs0\"..\"mcs15\", or an 802.11b rate \"dsss1\", \"dsss2\", \"cck5.5\", \"cck11\""}));
value_type!(PreambleT: String = |v| check::choice(v, &PREAMBLES), s_choice(&PREAMBLES));
value_type!(MpduError: f64 = check::mpdu_error, json!({"type": ["string", "number"], "description": "a fraction: \"1%\" or 0.01", "examples": ["1%"]}));
value_type!(SnrDb: f64 = |v| {
        let (lo, hi) = bloatlab_core::wifi::SNR_DB_RANGE;
        check::number_in(v, lo, hi, &format!("an SNR in dB from {lo} to {hi}"))
    },
    json!({"type": "number", "minimum": bloatlab_core::wifi::SNR_DB_RANGE.0, "maximum": bloatlab_core::wifi::SNR_DB_RANGE.1,
        "description": "the link's SNR in dB (one receive chain, 20 MHz): MPDUs are lost by the NIST error model at the rate used (docs/wifi.md)"}));
value_type!(RateControlT: String = |v| check::choice(v, &RATE_CONTROLS), s_choice(&RATE_CONTROLS));
value_type!(Weight: f64 = check::station_weight, json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1000}));
value_type!(AqlLimit: u64 = check::aql_limit, s_duration());

value_type!(ExpectCheck: String = |v| check::choice(v, &EXPECT_CHECKS), s_choice(&EXPECT_CHECKS));
value_type!(Score: f64 = |v| check::number_in(v, 0.0, 100.0, "a score threshold 0-100"),
    json!({"type": "number", "minimum": 0, "maximum": 100}));
value_type!(Seconds: f64 = |v| check::number_in(v, 0.0, f64::MAX, "seconds >= 0"), json!({"type": "number", "minimum": 0}));

fn dscp_enum() -> Vec<String> {
    let mut names = check::dscp_names();
    names.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    names.into_iter().map(|(n, _)| n).collect()
}

/// A whole number in `[LO, HI]`.
#[derive(Debug, Clone, Copy)]
pub struct Whole<const LO: i64, const HI: i64>(pub u64);

impl<const LO: i64, const HI: i64> Whole<LO, HI> {
    pub const fn of(n: u64) -> Self {
        Whole(n)
    }
}

impl<'de, const LO: i64, const HI: i64> Deserialize<'de> for Whole<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(d)?;
        check::whole(&raw, LO as i128, Some(HI as i128)).map(|n| Whole(n as u64)).map_err(D::Error::custom)
    }
}

impl<const LO: i64, const HI: i64> Serialize for Whole<LO, HI> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<const LO: i64, const HI: i64> JsonSchema for Whole<LO, HI> {
    fn schema_name() -> String {
        format!("Whole{LO}to{HI}")
    }
    fn is_referenceable() -> bool {
        false
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        serde_json::from_value(json!({"type": "integer", "minimum": LO, "maximum": HI})).expect("a schema literal")
    }
}

const I64MAX: i64 = i64::MAX;

// ---------------------------------------------------------------- tables

/// `[[flow]]`: one or `count` TCP connections.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// label (default "CC-DIRECTION-N")
    pub name: Option<Text>,
    #[serde(default = "d_cubic")]
    pub cc: Cc,
    #[serde(default = "d_down")]
    pub direction: Direction,
    /// base round-trip time
    pub rtt: PositiveDuration,
    /// identical connections
    #[serde(default = "d_one")]
    pub count: Whole<1, 100_000>,
    #[serde(default = "d_zero_s")]
    pub start: Duration,
    pub stop: Option<Duration>,
    /// bytes to send, then stop (default: bulk)
    pub size: Option<PositiveSize>,
    /// application-limited: offer at most this rate
    pub rate: Option<PositiveRate>,
    /// on/off source: send at rate for this long (a multiple of 10ms)
    pub on: Option<OnPeriod>,
    /// on/off source: then stay silent this long (a multiple of 10ms)
    pub off: Option<OffPeriod>,
    /// negotiate ECN (default: per cc)
    pub ecn: Option<Bool>,
    #[serde(default = "d_true")]
    pub tso: Bool,
    #[serde(default = "d_false")]
    pub pacing: Bool,
    /// the [[wifi.station]] this flow's client sits on
    pub station: Option<Text>,
    #[serde(default = "d_dscp")]
    pub dscp: Dscp,
}

/// `[[probe]]`: a latency probe.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub name: Option<Text>,
    #[serde(default = "d_udp")]
    pub kind: ProbeKind,
    #[serde(default = "d_10ms")]
    pub interval: PositiveDuration,
    /// base RTT (default: the smallest flow RTT)
    pub rtt: Option<PositiveDuration>,
    #[serde(default = "d_64b")]
    pub size: ProbeSize,
    #[serde(default = "d_down")]
    pub direction: Direction,
    pub station: Option<Text>,
    #[serde(default = "d_dscp")]
    pub dscp: Dscp,
}

/// `[[train]]`: a one-way burst of UDP packets, back to back or paced.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Train {
    pub name: Option<Text>,
    /// packets in the train (at most bloatlab-probe server's 4096)
    pub packets: Whole<1, 4096>,
    /// UDP payload of each packet (64..1472 B)
    #[serde(default = "d_1472b")]
    pub size: TrainSize,
    /// the sender's pace (IP packets); default: back to back
    pub rate: Option<PositiveRate>,
    #[serde(default = "d_zero_s")]
    pub start: Duration,
    #[serde(default = "d_down")]
    pub direction: Direction,
    /// base RTT (default: the smallest flow RTT)
    pub rtt: Option<PositiveDuration>,
    pub station: Option<Text>,
}

/// `[[page]]`: a web page load, each object a download.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    pub name: Option<Text>,
    /// number of objects (with size)
    pub objects: Option<Whole<1, 1000>>,
    /// the page's total size, split evenly over its objects
    pub size: Option<Size>,
    /// each object's size (instead of objects and size)
    pub sizes: Option<Vec<ObjectSize>>,
    #[serde(default = "d_connections")]
    pub connections: Whole<1, 64>,
    pub rtt: PositiveDuration,
    #[serde(default = "d_zero_s")]
    pub start: Duration,
    #[serde(default = "d_cubic")]
    pub cc: Cc,
    pub station: Option<Text>,
    #[serde(default = "d_dscp")]
    pub dscp: Dscp,
}

/// `[[wifi.station]]`: one or `count` WiFi clients.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Station {
    pub name: Option<Text>,
    pub phy_rate: StationPhy,
    #[serde(default = "d_one_k")]
    pub count: Whole<1, 1000>,
    #[serde(default = "d_zero")]
    pub mpdu_error: MpduError,
    #[serde(default = "d_weight")]
    pub weight: Weight,
    /// the link's SNR, dB (optional; needs phy_rate as an MCS)
    pub snr_db: Option<SnrDb>,
    /// "fixed" (phy_rate always) or "minstrel_ht" (mac80211's rate control over MCS 0 up to phy_rate)
    #[serde(default = "d_fixed")]
    pub rate_control: RateControlT,
    /// an 802.11b station's PLCP preamble: "long" (192 µs) or "short" (96 µs; not with "dsss1")
    pub preamble: Option<PreambleT>,
    /// with a DSSS/CCK phy_rate: an HT client held at that rate (no ERP protection, no long slot), not an 802.11b station
    pub ht_client: Option<Bool>,
}

/// `[limits]`: what one run may produce; raise knowingly.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "d_max_flows")]
    pub max_flows: Whole<1, I64MAX>,
    #[serde(default = "d_max_series_rows")]
    pub max_series_rows: Whole<1, I64MAX>,
    #[serde(default = "d_max_probe_packets")]
    pub max_probe_packets: Whole<1, I64MAX>,
    #[serde(default = "d_max_packets")]
    pub max_packets: Whole<1, I64MAX>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_flows: d_max_flows(), max_series_rows: d_max_series_rows(), max_probe_packets: d_max_probe_packets(), max_packets: d_max_packets() }
    }
}

/// A token bucket in front of the link (`policer`/`shaper`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    /// the bucket's rate
    pub rate: Rate,
    /// bucket depth (default: 10 ms at rate, at least 2 full packets)
    pub burst: Option<BurstSize>,
}

/// `autorate` of a link direction: CAKE at the rate cake-autorate's
/// controller sets, in front of the direction's own queue (docs/autorate.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Autorate {
    /// lowest shaper rate (min_*_shaper_rate_kbps); at least the connection-active threshold
    pub min: Rate,
    /// steady-state rate, where an idle link decays to (default: min)
    pub base: Option<Rate>,
    /// highest shaper rate (max_*_shaper_rate_kbps)
    pub max: Rate,
    /// one OWD sample this often, all reflectors together (6 pingers x 0.3 s)
    #[serde(default = "d_50ms")]
    pub ping_interval: PositiveDuration,
    /// an OWD this far above its baseline is a delayed sample (owd_delta_delay_thr_ms)
    #[serde(default = "d_30ms")]
    pub delay_threshold: PositiveDuration,
    /// achieved rate below which the direction counts as idle (connection_active_thr_kbps; default 2 Mbit/s);
    /// the script refuses a min below it, so a link slower than 2 Mbit/s lowers it
    pub active_threshold: Option<Rate>,
    /// Starlink satellite switch compensation (sss_compensation; off without this table, as in defaults.sh)
    pub sss: Option<Sss>,
}

/// `sss` of `autorate`: cake-autorate's Starlink satellite switch compensation
/// (its 66dba8e `defaults.sh`; docs/autorate.md): from `pre` before to `post`
/// after each switch, download falls to at most `base`, upload to `min`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sss {
    /// switch times past the minute of run time (sss_times_s), each within 0-60 s
    #[serde(default = "d_sss_times")]
    pub times: Vec<Duration>,
    /// the window opens this long before each switch (sss_compensation_pre_duration_ms)
    #[serde(default = "d_300ms")]
    pub pre: Duration,
    /// and closes this long after it (sss_compensation_post_duration_ms)
    #[serde(default = "d_200ms")]
    pub post: Duration,
}

fn d_sss_times() -> Vec<Duration> {
    ["12s", "27s", "42s", "57s"].iter().map(|t| Duration::of(json!(t))).collect()
}
fn d_300ms() -> Duration {
    Duration::of(json!("300ms"))
}
fn d_200ms() -> Duration {
    Duration::of(json!("200ms"))
}

fn d_50ms() -> PositiveDuration {
    PositiveDuration::of(json!("50ms"))
}
fn d_30ms() -> PositiveDuration {
    PositiveDuration::of(json!("30ms"))
}

/// `[link.down]`/`[link.up]`: a bottleneck.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub rate: LinkRateT,
    #[serde(default = "d_1bdp")]
    pub buffer: Buffer,
    #[serde(default = "d_zero_loss")]
    pub loss: Loss,
    /// a token-bucket policer in front of the queue
    pub policer: Option<Bucket>,
    /// a token-bucket shaper in front of the queue
    pub shaper: Option<Bucket>,
    /// a driver/device queue below the qdisc
    pub device_queue: Option<DeviceQueue>,
    /// cake-autorate: CAKE steered by one-way delay in front of this queue (docs/autorate.md)
    pub autorate: Option<Autorate>,
    /// the queue discipline
    #[serde(default = "d_fifo")]
    pub qdisc: Qdisc,
    /// the qdisc's parameters (by `qdisc`: `bloatlab qdiscs` lists them)
    pub qdisc_params: Option<Value>,
}

/// `[link]`: the bottlenecks, by direction.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Links {
    /// the downlink (server -> client)
    pub down: Option<Link>,
    /// the uplink (client -> server)
    pub up: Option<Link>,
}

/// `[wifi.aql]`: mac80211's Airtime Queue Limits (Linux >= 5.5) of a driver
/// that opts in to them (ath10k, mt76; not ath9k); `mac = "airtime"` only
/// (docs/wifi.md). The defaults are mac80211's.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Aql {
    /// expected airtime a station may always have below mac80211 (IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L)
    #[serde(default = "d_aql_low")]
    pub limit_low: AqlLimit,
    /// what it may have while the device's total is below threshold (IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H)
    #[serde(default = "d_aql_high")]
    pub limit_high: AqlLimit,
    /// the device's pending airtime from which every station is held to limit_low (IEEE80211_AQL_THRESHOLD)
    #[serde(default = "d_aql_threshold")]
    pub threshold: AqlLimit,
}

/// `[wifi]`: a shared WiFi medium instead of `[link]` bottlenecks (docs/wifi.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wifi {
    #[serde(default = "d_airtime")]
    pub mac: WifiMac,
    /// the interface queue of the AP and of each station (Linux txqueuelen: 1000 packets)
    #[serde(default = "d_1000pkt")]
    pub buffer: WifiBuffer,
    pub station: Vec<Station>,
    /// the queue discipline (legacy MAC)
    #[serde(default = "d_fifo")]
    pub qdisc: Qdisc,
    /// the qdisc's parameters (by `qdisc`)
    pub qdisc_params: Option<Value>,
    /// mac80211's Airtime Queue Limits, as an AQL driver (ath10k, mt76) has them; airtime only
    pub aql: Option<Aql>,
}

/// `[[expect]]`: a score of transperf's every run must reach (`bloatlab run`
/// and `sweep`/`reproduce --check` judge it; python/bloatlab/study/expect.py).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// the score: tput, rtt_med, lock_on_bw, loss_avoid, fairness or convergence_fairness
    pub check: ExpectCheck,
    /// transperf's threshold for that score (0-100, higher is better)
    pub min: Score,
    /// fairness and convergence_fairness: seconds before fairness is asked for (default 4)
    pub convergence_sec: Option<Seconds>,
}

/// A bloatlab scenario (docs/scenario.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "bloatlab scenario")]
pub struct Document {
    /// the scenario's name (default: the file's)
    pub name: Option<Text>,
    pub description: Option<Text>,
    /// length of the run
    pub duration: PositiveDuration,
    #[serde(default = "d_seed")]
    pub seed: Whole<0, I64MAX>,
    /// time-series sampling interval
    #[serde(default = "d_10ms")]
    pub sample_interval: PositiveDuration,
    /// start each connection up to this much later (seeded)
    pub start_jitter: Option<Duration>,
    /// simulator: each data segment reaches its receiver's TCP up to this much later (a seeded uniform draw, never
    /// before the flow's segment ahead of it): the receiving host's timing noise (default 0: none; at most 10 ms)
    pub rx_jitter: Option<Duration>,
    #[serde(default)]
    pub flow: Vec<Flow>,
    #[serde(default)]
    pub page: Vec<Page>,
    #[serde(default)]
    pub probe: Vec<Probe>,
    #[serde(default)]
    pub train: Vec<Train>,
    pub link: Option<Links>,
    pub wifi: Option<Wifi>,
    /// what one run may produce; raise knowingly
    #[serde(default)]
    pub limits: Limits,
    /// transperf's scores the run must reach
    #[serde(default)]
    pub expect: Vec<Expect>,
}

fn d_cubic() -> Cc {
    Cc::of(json!("cubic"))
}
fn d_down() -> Direction {
    Direction::of(json!("down"))
}
fn d_one() -> Whole<1, 100_000> {
    Whole(1)
}
fn d_one_k() -> Whole<1, 1000> {
    Whole(1)
}
fn d_zero_s() -> Duration {
    Duration::of(json!("0s"))
}
fn d_true() -> Bool {
    Bool::of(json!(true))
}
fn d_false() -> Bool {
    Bool::of(json!(false))
}
fn d_dscp() -> Dscp {
    Dscp::of(json!(0))
}
fn d_udp() -> ProbeKind {
    ProbeKind::of(json!("udp"))
}
fn d_10ms() -> PositiveDuration {
    PositiveDuration::of(json!("10ms"))
}
fn d_1472b() -> TrainSize {
    TrainSize::of(json!("1472B"))
}
fn d_64b() -> ProbeSize {
    ProbeSize::of(json!("64B"))
}
fn d_connections() -> Whole<1, 64> {
    Whole(PAGE_CONNECTIONS)
}
fn d_zero() -> MpduError {
    MpduError::of(json!(0))
}
fn d_weight() -> Weight {
    Weight::of(json!(1))
}
fn d_fixed() -> RateControlT {
    RateControlT::of(json!("fixed"))
}
fn d_max_flows() -> Whole<1, I64MAX> {
    Whole(LIMITS[0].1)
}
fn d_max_series_rows() -> Whole<1, I64MAX> {
    Whole(LIMITS[1].1)
}
fn d_max_probe_packets() -> Whole<1, I64MAX> {
    Whole(LIMITS[2].1)
}
fn d_max_packets() -> Whole<1, I64MAX> {
    Whole(LIMITS[3].1)
}
fn d_1bdp() -> Buffer {
    Buffer::of(json!("1bdp"))
}
fn d_zero_loss() -> Loss {
    Loss::of(json!(0))
}
fn d_fifo() -> Qdisc {
    Qdisc::of(json!("fifo"))
}
fn d_airtime() -> WifiMac {
    WifiMac::of(json!("airtime"))
}
fn d_aql_low() -> AqlLimit {
    AqlLimit::of(json!(format!("{}ms", bloatlab_core::wifi::aql::DEFAULT_LIMIT_LOW_US / 1000)))
}
fn d_aql_high() -> AqlLimit {
    AqlLimit::of(json!(format!("{}ms", bloatlab_core::wifi::aql::DEFAULT_LIMIT_HIGH_US / 1000)))
}
fn d_aql_threshold() -> AqlLimit {
    AqlLimit::of(json!(format!("{}ms", bloatlab_core::wifi::aql::DEFAULT_THRESHOLD_US / 1000)))
}
fn d_1000pkt() -> WifiBuffer {
    WifiBuffer::of(json!("1000pkt"))
}
fn d_seed() -> Whole<0, I64MAX> {
    Whole(1)
}

/// What to say when a table lacks a key it needs, by the table's place in
/// the document (its key path) and the key.
pub fn missing_message(table: &[String], key: &str) -> String {
    let t: Vec<&str> = table.iter().map(String::as_str).collect();
    let m = match (t.as_slice(), key) {
        ([], "duration") => "missing (e.g. duration = \"60s\")",
        (["flow", _], "rtt") => "missing (the flow's base RTT, e.g. rtt = \"50ms\")",
        (["page", _], "rtt") => "missing (the base RTT to the page's server, e.g. rtt = \"50ms\")",
        (["train", _], "packets") => "missing (how many packets the train sends, e.g. packets = 200)",
        (["link", _], "rate") => "missing (e.g. rate = \"100Mbit\")",
        (["link", _, _], "rate") => "missing (e.g. rate = \"2Mbit\")",
        (["link", _, "autorate"], "min") => "missing (the lowest shaper rate, e.g. min = \"5Mbit\")",
        (["link", _, "autorate"], "max") => "missing (the highest shaper rate, e.g. max = \"80Mbit\")",
        (["wifi", "station", _], "phy_rate") => "missing (e.g. phy_rate = \"144.4Mbit\" or \"mcs15\")",
        (["wifi"], "station") => "no station: add at least one [[wifi.station]] with a phy_rate",
        (["expect", _], "check") => "missing (e.g. check = \"tput\"; one of tput, rtt_med, lock_on_bw, loss_avoid, fairness, convergence_fairness)",
        (["expect", _], "min") => "missing (transperf's threshold, e.g. min = 80)",
        _ => "missing",
    };
    m.to_string()
}

/// What to say when a table (or a list of them) is something else.
pub fn not_table_message(at: &[String], got: &str) -> String {
    let t: Vec<&str> = at.iter().map(String::as_str).collect();
    match t.as_slice() {
        ["flow"] | ["probe"] | ["page"] | ["train"] => format!("expected [[{}]] tables", t[0]),
        ["expect"] => "expected [[expect]] tables (check = \"tput\", min = 80)".into(),
        ["wifi", "station"] => "expected [[wifi.station]] tables".into(),
        ["page", _, "sizes"] => format!("expected a list of 1..{MAX_PAGE_OBJECTS} sizes like [\"30KB\", \"2KB\"]"),
        ["link", _, "policer"] | ["link", _, "shaper"] => format!("expected a table like {{ rate = \"2Mbit\", burst = \"10KB\" }}, got {got}"),
        ["link", _, "autorate"] => format!("expected a table like {{ min = \"5Mbit\", max = \"80Mbit\" }}, got {got}"),
        ["link", _, "autorate", "sss"] => {
            format!("expected a table like {{ times = [\"12s\", \"27s\", \"42s\", \"57s\"], pre = \"300ms\", post = \"200ms\" }} (sss = {{}}: defaults.sh's), got {got}")
        }
        ["wifi", "aql"] => format!("expected a table like {{ limit_low = \"5ms\" }} (aql = {{}}: mac80211's defaults), got {got}"),
        _ => format!("expected a table, got {got}"),
    }
}

/// What to say of a key a table does not know.
pub fn unknown_message(table: &[String], known: &[String]) -> String {
    if table.len() == 1 && table[0] == "limits" {
        return format!("unknown limit (known: {})", known.join(", "));
    }
    format!("unknown key (known here: {})", if known.is_empty() { "none".into() } else { known.join(", ") })
}

/// The keys of each table (for `--set` paths): TOP_KEYS, LINK_KEYS, ...
pub fn key_names() -> Vec<(&'static str, Vec<String>)> {
    use schemars::schema::{Schema, SchemaObject};
    fn props<T: JsonSchema>() -> Vec<String> {
        let mut gen = SchemaGenerator::default();
        let s = T::json_schema(&mut gen);
        match s {
            Schema::Object(SchemaObject { object: Some(o), .. }) => o.properties.keys().cloned().collect(),
            _ => vec![],
        }
    }
    vec![
        ("TOP_KEYS", props::<Document>()),
        ("LINK_KEYS", props::<Link>()),
        ("BUCKET_KEYS", props::<Bucket>()),
        ("FLOW_KEYS", props::<Flow>()),
        ("PROBE_KEYS", props::<Probe>()),
        ("PAGE_KEYS", props::<Page>()),
        ("TRAIN_KEYS", props::<Train>()),
        ("WIFI_KEYS", props::<Wifi>()),
        ("WIFI_STATION_KEYS", props::<Station>()),
        ("WIFI_AQL_KEYS", props::<Aql>()),
        ("LIMITS_KEYS", props::<Limits>()),
        ("EXPECT_KEYS", props::<Expect>()),
    ]
}
