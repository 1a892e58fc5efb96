//! The raw result's time-series tables (docs/engine-interface.md "series"),
//! columnar: every column of one table has one entry per sample.
//!
//! With the `arrow` feature each table becomes an Arrow record batch
//! ([`FlowSeries::into_arrow`], ...) without copying its numeric columns (the
//! column vectors become the Arrow buffers). The Arrow types are those pandas
//! gave the same table when it crossed as JSON, so that stored Parquet files
//! and everything reading them see the same dtypes: integers as `int64`
//! (`uint64` only if a value exceeds `i64::MAX`, as pandas would infer), times
//! and delays as `float64`, labels as UTF-8 strings, a lost probe as null.

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

/// A column of labels from a small set (a sender's state: "open",
/// "recovery", ...), kept as one byte a row: the label's index among those
/// seen so far. A million flow samples take 1 MB instead of the 16 MB of as
/// many `&str`, which the engine would write (and the kernel fault in) while
/// it runs; Arrow and serde see the labels as text all the same.
///
/// The labels are `&'static str`s of the code (a control's state names, the
/// directions), so there are few of them: at most 256 in one column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    names: Vec<&'static str>,
    codes: Vec<u8>,
}

impl Labels {
    pub fn push(&mut self, label: &'static str) {
        // the same literal is the same pointer: compare the text only for a new one
        let code = match self.names.iter().position(|&n| std::ptr::eq(n, label)) {
            Some(i) => i,
            None => match self.names.iter().position(|&n| n == label) {
                Some(i) => i,
                None => {
                    self.names.push(label);
                    self.names.len() - 1
                }
            },
        };
        self.codes.push(u8::try_from(code).expect("at most 256 distinct labels in a column"));
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    pub fn clear(&mut self) {
        self.codes.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.codes.iter().map(|&c| self.names[c as usize])
    }
}

impl Extend<&'static str> for Labels {
    fn extend<I: IntoIterator<Item = &'static str>>(&mut self, labels: I) {
        labels.into_iter().for_each(|l| self.push(l));
    }
}

impl From<Vec<&'static str>> for Labels {
    fn from(v: Vec<&'static str>) -> Self {
        let mut l = Labels::default();
        l.extend(v);
        l
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(Some(self.len()))?;
        for l in self.iter() {
            seq.serialize_element(l)?;
        }
        seq.end()
    }
}

/// Per-flow samples, one row per flow and sampling instant (`t` in s from the run's start).
/// The simulator, the emulator and the probe (its TCP_INFO samples) fill it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowSeries {
    pub flow: Vec<u32>,
    pub t: Vec<f64>,
    pub cwnd_bytes: Vec<u64>,
    pub inflight_bytes: Vec<u64>,
    pub srtt_ms: Vec<f64>,
    pub pacing_rate_bps: Vec<u64>,
    pub delivery_rate_bps: Vec<u64>,
    /// Payload bytes that reached the receiver in order (the cumulative ACK).
    pub delivered_bytes: Vec<u64>,
    /// Payload bytes the sender knows reached the receiver, in any order: a
    /// SACKed segment counts when it is SACKed, not when the hole before it
    /// fills (Linux's `tp->delivered`, `tcpi_delivered`, in segments x the
    /// MSS; the simulator's and the probe's alike). Over a window
    /// its difference is what the path delivered, without the cumulative
    /// ACK's jumps as SACK recovery fills holes. A counter: read differences.
    pub sack_delivered_bytes: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub state: Labels,
}

impl FlowSeries {
    /// Room for `rows` more samples in every column, taken once by an engine
    /// that knows how many rows it writes at most (flows x sampling
    /// instants); only the pages written become resident. The columns are
    /// also offered huge pages ([`reserve`]): a thousand flows' 65 MB of
    /// samples were 16 000 page faults of 4 KB, ~30 ms of a 0.3-s run.
    pub fn reserve(&mut self, rows: usize) {
        reserve(&mut self.flow, rows);
        reserve(&mut self.t, rows);
        reserve(&mut self.cwnd_bytes, rows);
        reserve(&mut self.inflight_bytes, rows);
        reserve(&mut self.srtt_ms, rows);
        reserve(&mut self.pacing_rate_bps, rows);
        reserve(&mut self.delivery_rate_bps, rows);
        reserve(&mut self.delivered_bytes, rows);
        reserve(&mut self.sack_delivered_bytes, rows);
        reserve(&mut self.retransmits, rows);
        reserve(&mut self.state.codes, rows);
    }

    /// The rows of `o` after ours.
    pub fn append(&mut self, o: &FlowSeries) {
        self.flow.extend(&o.flow);
        self.t.extend(&o.t);
        self.cwnd_bytes.extend(&o.cwnd_bytes);
        self.inflight_bytes.extend(&o.inflight_bytes);
        self.srtt_ms.extend(&o.srtt_ms);
        self.pacing_rate_bps.extend(&o.pacing_rate_bps);
        self.delivery_rate_bps.extend(&o.delivery_rate_bps);
        self.delivered_bytes.extend(&o.delivered_bytes);
        self.sack_delivered_bytes.extend(&o.sack_delivered_bytes);
        self.retransmits.extend(&o.retransmits);
        self.state.extend(o.state.iter());
    }
}

/// Room for `rows` more elements in `v` (none if the allocator refuses: `v`
/// then grows as it fills), and on Linux the 2 MB-aligned part of it
/// advised for transparent huge pages (`madvise(MADV_HUGEPAGE)`, for
/// systems whose THP mode is `madvise`): one page fault per 2 MB written
/// instead of 512. Only the pages written become resident; the advice
/// changes no content.
fn reserve<T>(v: &mut Vec<T>, rows: usize) {
    if v.try_reserve_exact(rows).is_err() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if b > a {
            // SAFETY: [a, b) lies within v's allocation; the advice changes how its pages are backed, not what they hold.
            unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE) };
        }
    }
}

/// Per-direction bottleneck samples (`direction` is "down" or "up"; `drops` since the previous sample).
#[derive(Debug, Default, Serialize)]
pub struct LinkSeries {
    pub direction: Labels,
    pub t: Vec<f64>,
    pub queue_bytes: Vec<u64>,
    pub qdelay_ms: Vec<f64>,
    pub drops: Vec<u64>,
}

/// One row per probe sent (`t` when sent); `rtt_ms` is `None` for a lost probe.
#[derive(Debug, Default, Serialize)]
pub struct ProbeSeries {
    pub probe: Vec<u32>,
    pub t: Vec<f64>,
    pub rtt_ms: Vec<Option<f64>>,
}

/// The three tables of a raw result.
#[derive(Debug, Default, Serialize)]
pub struct Series {
    pub flows: FlowSeries,
    pub links: LinkSeries,
    pub probes: ProbeSeries,
}

#[cfg(feature = "arrow")]
pub use self::arrow::*;

#[cfg(feature = "arrow")]
mod arrow {
    use super::*;
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
    use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
    use arrow_schema::{ArrowError, DataType, Field, Schema};
    use std::sync::Arc;

    /// The names of the three tables, in the order [`Series::into_arrow`] returns them.
    pub const TABLES: [&str; 3] = ["flows", "links", "probes"];

    /// Counts and byte figures: `int64` sharing the vector's memory (a `u64`
    /// below 2^63 has the same bits as an `i64`); `uint64` if one is larger.
    fn ints(v: Vec<u64>) -> ArrayRef {
        // no value with the top bit set (an OR over the column, which vectorizes)
        if v.iter().fold(0, |acc, &x| acc | x) <= i64::MAX as u64 {
            let n = v.len();
            Arc::new(Int64Array::new(ScalarBuffer::new(Buffer::from_vec(v), 0, n), None))
        } else {
            Arc::new(UInt64Array::new(ScalarBuffer::from(v), None))
        }
    }

    fn ids(v: Vec<u32>) -> ArrayRef {
        let mut out = Vec::new();
        reserve(&mut out, v.len());
        out.extend(v.into_iter().map(i64::from));
        Arc::new(Int64Array::new(ScalarBuffer::from(out), None))
    }

    fn floats(v: Vec<f64>) -> ArrayRef {
        Arc::new(Float64Array::new(ScalarBuffer::from(v), None))
    }

    /// UTF-8 text, its offsets and bytes written once at their final size.
    fn labels(v: Labels) -> Result<ArrayRef, ArrowError> {
        let lens: Vec<usize> = v.names.iter().map(|n| n.len()).collect();
        let total: usize = v.codes.iter().map(|&c| lens[c as usize]).sum();
        let too_long = || ArrowError::InvalidArgumentError(format!("{total} bytes of labels: more than a UTF-8 column holds"));
        i32::try_from(total).map_err(|_| too_long())?;
        let (mut offsets, mut bytes) = (Vec::new(), Vec::new());
        reserve(&mut offsets, v.len() + 1);
        reserve(&mut bytes, total);
        offsets.push(0i32);
        for &c in &v.codes {
            bytes.extend_from_slice(v.names[c as usize].as_bytes());
            offsets.push(bytes.len() as i32);
        }
        Ok(Arc::new(StringArray::try_new(OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from_vec(bytes), None)?))
    }

    /// A record batch of `cols` in order, but those named in `omit`;
    /// `nullable` names the columns that may hold nulls.
    fn batch(cols: Vec<(&str, ArrayRef)>, nullable: &[&str], omit: &[&str]) -> Result<RecordBatch, ArrowError> {
        let cols: Vec<(&str, ArrayRef)> = cols.into_iter().filter(|(name, _)| !omit.contains(name)).collect();
        let fields: Vec<Field> =
            cols.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), nullable.contains(name))).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols.into_iter().map(|(_, a)| a).collect())
    }

    impl FlowSeries {
        pub fn into_arrow(self) -> Result<RecordBatch, ArrowError> {
            self.into_arrow_without(&[])
        }

        /// The table without the columns named in `omit` (an engine's
        /// columns it has no figure for: they stay empty and are left out).
        pub fn into_arrow_without(self, omit: &[&str]) -> Result<RecordBatch, ArrowError> {
            batch(
                vec![
                    ("flow", ids(self.flow)),
                    ("t", floats(self.t)),
                    ("cwnd_bytes", ints(self.cwnd_bytes)),
                    ("inflight_bytes", ints(self.inflight_bytes)),
                    ("srtt_ms", floats(self.srtt_ms)),
                    ("pacing_rate_bps", ints(self.pacing_rate_bps)),
                    ("delivery_rate_bps", ints(self.delivery_rate_bps)),
                    ("delivered_bytes", ints(self.delivered_bytes)),
                    ("sack_delivered_bytes", ints(self.sack_delivered_bytes)),
                    ("retransmits", ints(self.retransmits)),
                    ("state", labels(self.state)?),
                ],
                &[],
                omit,
            )
        }
    }

    impl LinkSeries {
        pub fn into_arrow(self) -> Result<RecordBatch, ArrowError> {
            self.into_arrow_without(&[])
        }

        /// The table without the columns named in `omit` (an engine's
        /// columns it has no figure for: they stay empty and are left out).
        pub fn into_arrow_without(self, omit: &[&str]) -> Result<RecordBatch, ArrowError> {
            batch(
                vec![
                    ("direction", labels(self.direction)?),
                    ("t", floats(self.t)),
                    ("queue_bytes", ints(self.queue_bytes)),
                    ("qdelay_ms", floats(self.qdelay_ms)),
                    ("drops", ints(self.drops)),
                ],
                &[],
                omit,
            )
        }
    }

    impl ProbeSeries {
        pub fn into_arrow(self) -> Result<RecordBatch, ArrowError> {
            self.into_arrow_without(&[])
        }

        /// The table without the columns named in `omit` (an engine's
        /// columns it has no figure for: they stay empty and are left out).
        pub fn into_arrow_without(self, omit: &[&str]) -> Result<RecordBatch, ArrowError> {
            let rtt: ArrayRef = Arc::new(Float64Array::from(self.rtt_ms));
            batch(vec![("probe", ids(self.probe)), ("t", floats(self.t)), ("rtt_ms", rtt)], &["rtt_ms"], omit)
        }
    }

    impl Series {
        /// The tables named in [`TABLES`], in that order.
        pub fn into_arrow(self) -> Result<[RecordBatch; 3], ArrowError> {
            self.into_arrow_without(&[])
        }

        /// The tables without the columns named in `omit` (in any table).
        pub fn into_arrow_without(self, omit: &[&str]) -> Result<[RecordBatch; 3], ArrowError> {
            Ok([self.flows.into_arrow_without(omit)?, self.links.into_arrow_without(omit)?, self.probes.into_arrow_without(omit)?])
        }
    }

    /// Write `batch` as an Arrow IPC file (the random-access "file" format,
    /// uncompressed: `pyarrow.ipc.open_file(path).read_all()` reads it back).
    #[cfg(feature = "ipc")]
    pub fn write_ipc(path: &std::path::Path, batch: &RecordBatch) -> Result<(), String> {
        let err = |e: ArrowError| format!("{}: {e}", path.display());
        let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut w = arrow_ipc::writer::FileWriter::try_new(std::io::BufWriter::new(f), &batch.schema()).map_err(err)?;
        w.write(batch).map_err(err)?;
        w.finish().map_err(err)
    }

    /// The Arrow type of each column, for the tests and the docs.
    pub fn column_types(b: &RecordBatch) -> Vec<(String, DataType)> {
        b.schema().fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect()
    }
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn a_label_column_keeps_its_rows_in_order_and_serialises_as_the_strings() {
        let mut l = Labels::default();
        for s in ["open", "recovery", "open", "loss", "recovery"] {
            l.push(s);
        }
        // the same text from another place in memory is the same label
        let owned = String::from("loss");
        l.push(Box::leak(owned.into_boxed_str()));
        assert_eq!(l.iter().collect::<Vec<_>>(), ["open", "recovery", "open", "loss", "recovery", "loss"]);
        assert_eq!(l.names.len(), 3);
        assert_eq!(serde_json::to_string(&l).unwrap(), r#"["open","recovery","open","loss","recovery","loss"]"#);
        l.clear();
        assert!(l.is_empty());
    }
}

#[cfg(all(test, feature = "arrow"))]
mod tests {
    use super::*;
    use arrow_array::{Array, Float64Array, Int64Array, StringArray, UInt64Array};
    use arrow_schema::DataType;

    fn two_flow_samples() -> FlowSeries {
        FlowSeries {
            flow: vec![0, 1],
            t: vec![0.1, 0.1],
            cwnd_bytes: vec![14480, 28960],
            inflight_bytes: vec![1448, 0],
            srtt_ms: vec![100.5, 101.0],
            pacing_rate_bps: vec![1_000_000, 2_000_000],
            delivery_rate_bps: vec![0, 5],
            delivered_bytes: vec![7, 8],
            sack_delivered_bytes: vec![9, 8],
            retransmits: vec![0, 3],
            state: vec!["open", "recovery"].into(),
        }
    }

    #[test]
    fn a_flow_table_keeps_its_columns_in_order_with_the_types_pandas_gave_them() {
        let b = two_flow_samples().into_arrow().unwrap();
        let names: Vec<String> = column_types(&b).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            ["flow", "t", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps", "delivery_rate_bps", "delivered_bytes", "sack_delivered_bytes", "retransmits", "state"]
        );
        assert_eq!(b.num_rows(), 2);
        assert_eq!(b.column(0).data_type(), &DataType::Int64);
        assert_eq!(b.column(1).data_type(), &DataType::Float64);
        assert_eq!(b.column(10).data_type(), &DataType::Utf8);
        let cwnd = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(cwnd.values().as_ref(), &[14480, 28960]);
        let state = b.column(10).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((state.value(0), state.value(1)), ("open", "recovery"));
    }

    #[test]
    fn a_count_above_i64_max_makes_the_column_uint64_and_keeps_its_value() {
        let mut f = two_flow_samples();
        f.pacing_rate_bps[1] = u64::MAX;
        let b = f.into_arrow().unwrap();
        let col = b.column(5).as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(col.value(1), u64::MAX);
        assert_eq!(b.column(2).data_type(), &DataType::Int64);
    }

    #[test]
    fn a_lost_probe_is_null_and_the_others_keep_their_rtt() {
        let p = ProbeSeries { probe: vec![0, 0, 0], t: vec![0.0, 0.1, 0.2], rtt_ms: vec![Some(20.0), None, Some(21.5)] };
        let b = p.into_arrow().unwrap();
        let rtt = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!((rtt.null_count(), rtt.is_null(1), rtt.value(2)), (1, true, 21.5));
        assert!(b.schema().field(2).is_nullable());
        assert!(!b.schema().field(1).is_nullable());
    }

    #[cfg(feature = "ipc")]
    #[test]
    fn an_ipc_file_reads_back_as_the_table_written() {
        let b = two_flow_samples().into_arrow().unwrap();
        let path = std::env::temp_dir().join(format!("bloatlab-series-{}.arrow", std::process::id()));
        write_ipc(&path, &b).unwrap();
        let r = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&path).unwrap(), None).unwrap();
        let back: Vec<_> = r.map(|x| x.unwrap()).collect();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, vec![b]);
    }

    #[test]
    fn an_engine_without_a_figure_leaves_its_empty_column_out() {
        let mut f = two_flow_samples();
        f.state.clear();
        assert!(f.into_arrow().is_err()); // a short column is an error, not padded
        let mut f = two_flow_samples();
        f.state.clear();
        let b = f.into_arrow_without(&["state", "drops"]).unwrap();
        assert_eq!((b.num_rows(), b.num_columns()), (2, 10));
        assert_eq!(b.schema().field(9).name(), "retransmits");
    }

    #[test]
    fn a_table_reserved_for_its_rows_up_front_is_the_table_grown_row_by_row() {
        let rows = 300_000; // past 2 MB a column: the huge-page advice is taken
        let mut grown = FlowSeries::default();
        let mut reserved = FlowSeries::default();
        reserved.reserve(rows);
        for s in [&mut grown, &mut reserved] {
            for i in 0..rows as u64 {
                s.flow.push(i as u32 % 7);
                s.t.push(i as f64 / 100.0);
                s.cwnd_bytes.push(i * 1448);
                s.inflight_bytes.push(i);
                s.srtt_ms.push(0.5 * i as f64);
                s.pacing_rate_bps.push(i << 20);
                s.delivery_rate_bps.push(i << 10);
                s.delivered_bytes.push(i * 3);
                s.sack_delivered_bytes.push(i * 4);
                s.retransmits.push(i / 100);
                s.state.push(if i % 3 == 0 { "open" } else { "recovery" });
            }
        }
        assert!(reserved.cwnd_bytes.capacity() >= rows);
        assert_eq!(reserved.into_arrow().unwrap(), grown.into_arrow().unwrap());
    }

    #[test]
    fn empty_tables_still_have_their_columns() {
        let [f, l, p] = Series::default().into_arrow().unwrap();
        assert_eq!((f.num_rows(), f.num_columns()), (0, 11));
        assert_eq!((l.num_rows(), l.num_columns()), (0, 5));
        assert_eq!((p.num_rows(), p.num_columns()), (0, 3));
    }
}
