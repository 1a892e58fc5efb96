//! The thin PyO3 binding: converts types, holds no logic. Python imports it as
//! `bloatlab._native`.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::ffi::FFI_ArrowSchema;
use bloatlab_core::qdisc::{ParamKind, QdiscKind};
use bloatlab_schema::series::TABLES;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use std::ffi::CString;

/// One time-series table of a raw result, handed to Python without copying
/// through the Arrow PyCapsule interface: `pyarrow.table(t)` (or polars,
/// DuckDB, ...) reads the engine's own buffers. Immutable; each call of
/// `__arrow_c_stream__` gives a new stream over the same buffers.
#[pyclass(frozen, module = "bloatlab._native")]
struct ArrowTable {
    batch: RecordBatch,
}

#[pymethods]
impl ArrowTable {
    /// The table as an ArrowArrayStream capsule (one record batch). The
    /// table has one schema: a `requested_schema` is left to the consumer to
    /// cast to, as the interface allows.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, stream, Some(CString::new("arrow_array_stream").expect("no NUL")))
    }

    /// The table's schema as an ArrowSchema capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.batch.schema().as_ref()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyCapsule::new(py, schema, Some(CString::new("arrow_schema").expect("no NUL")))
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// The column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.batch.schema().fields().iter().map(|f| f.name().clone()).collect()
    }

    fn __repr__(&self) -> String {
        format!("<ArrowTable {} rows: {}>", self.batch.num_rows(), self.column_names().join(", "))
    }
}

/// Run the simulator on a resolved scenario (JSON, docs/engine-interface.md);
/// returns the raw result as Python objects, except `raw["series"]`: a dict
/// of `ArrowTable`s (flows, links, probes). `pcap`: an existing directory
/// to write down.pcap and up.pcap into. `flow_series=False`: the flows'
/// samples are not stored (an empty `flows` table; every other output the
/// same), for a caller that reads only the summary. Releases the GIL while
/// simulating and while building the tables.
#[pyfunction]
#[pyo3(signature = (resolved_json, pcap=None, flow_series=true))]
fn run_sim<'py>(
    py: Python<'py>,
    resolved_json: &str,
    pcap: Option<std::path::PathBuf>,
    flow_series: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let json = resolved_json.to_owned();
    // The run goes on a thread of its own while this one looks for signals every 50 ms: Python runs its
    // handlers (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM) only between bytecodes, so a run in this
    // thread would hold a Ctrl-C until its end (minutes for a long one). A signal cancels the run.
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let flag = cancel.clone();
    let worker = std::thread::Builder::new()
        .name("bloatlab-sim".into())
        .stack_size(64 << 20) // the main thread's 8 MB and more: the run used to go there
        .spawn(move || {
            let out = (|| {
                let mut raw = bloatlab_sim::run_cancellable(&json, pcap.as_deref(), Some(&flag), flow_series)?;
                let tables = std::mem::take(&mut raw.series).into_arrow().map_err(|e| format!("time series: {e}"))?;
                Ok::<_, String>((raw, tables))
            })();
            let _ = tx.send(out);
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the simulator's thread: {e}")))?;
    let mut rx = Some(rx);
    let result = loop {
        // the receiver goes into the GIL-free closure and back (it is Send, not Sync)
        let (back, got) = py.allow_threads(|| {
            let r = rx.take().expect("the receiver is back after each wait");
            let got = r.recv_timeout(std::time::Duration::from_millis(50));
            (r, got)
        });
        rx = Some(back);
        match got {
            Ok(r) => break r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    let _ = py.allow_threads(|| worker.join());
                    return Err(e);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Err("the simulator's thread ended without a result (a panic: see the message above)".into())
            }
        }
    };
    let _ = worker.join();
    let (raw, tables) = result.map_err(PyValueError::new_err)?;
    let out = pythonize::pythonize(py, &raw)?.downcast_into::<PyDict>()?;
    let series = PyDict::new(py);
    for (name, batch) in TABLES.into_iter().zip(tables) {
        series.set_item(name, Bound::new(py, ArrowTable { batch })?)?;
    }
    out.set_item("series", series)?;
    Ok(out)
}

/// Check a resolved scenario (JSON) as the simulator would build it; a
/// ValueError names the key ("link.down.qdisc_params.alpha: ...").
#[pyfunction]
fn check_sim(resolved_json: &str) -> PyResult<()> {
    bloatlab_sim::check_json(resolved_json).map_err(PyValueError::new_err)
}

/// Congestion controls the simulator knows.
#[pyfunction]
fn cc_names() -> Vec<&'static str> {
    bloatlab_core::cc::names()
}

/// The control catalogue: [{name, source, mainline, doc}].
#[pyfunction]
fn ccs(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for c in bloatlab_core::cc::catalog() {
        let d = PyDict::new(py);
        d.set_item("name", c.name)?;
        d.set_item("source", c.source)?;
        d.set_item("mainline", c.mainline)?;
        d.set_item("doc", c.doc)?;
        out.append(d)?;
    }
    Ok(out)
}

fn kind_str(k: ParamKind) -> String {
    match k {
        ParamKind::Time => "time".into(),
        ParamKind::Size => "size".into(),
        ParamKind::Count => "count".into(),
        ParamKind::Bool => "bool".into(),
        ParamKind::Ratio => "ratio".into(),
        ParamKind::Rate => "rate".into(),
        ParamKind::Choice(c) => format!("choice:{}", c.join(",")),
    }
}

/// The qdisc registry: [{name, doc, params: [{name, kind, default, min, max, doc}]}]
/// (values in base units: ns, bytes, bit/s, 0/1, a choice's index; min and max inclusive).
#[pyfunction]
fn qdiscs(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for q in QdiscKind::all() {
        let d = PyDict::new(py);
        d.set_item("name", q.name())?;
        d.set_item("doc", q.doc())?;
        let ps = PyList::empty(py);
        for p in q.params() {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("kind", kind_str(p.kind))?;
            pd.set_item("default", p.default)?;
            pd.set_item("min", p.min)?;
            pd.set_item("max", p.max)?;
            pd.set_item("doc", p.doc)?;
            ps.append(pd)?;
        }
        d.set_item("params", ps)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Parse a unit string with the scenario language's one grammar
/// (`bloatlab_core::units`): kind is rate | duration | size | ratio | buffer.
/// Returns an int of base units (bit/s, ns, bytes), a float (ratio), or
/// `(kind, amount)` for a buffer (`"bytes"`, `"pkts"` or `"bdp"`). A
/// ValueError carries the grammar's message.
#[pyfunction]
fn parse_unit(py: Python<'_>, kind: &str, text: &str) -> PyResult<PyObject> {
    use bloatlab_core::units::{self, Buffer};
    let err = PyValueError::new_err;
    Ok(match kind {
        "rate" => units::parse_rate(text).map_err(err)?.into_pyobject(py)?.into_any().unbind(),
        "duration" => units::parse_duration(text).map_err(err)?.into_pyobject(py)?.into_any().unbind(),
        "size" => units::parse_size(text).map_err(err)?.into_pyobject(py)?.into_any().unbind(),
        "ratio" => units::parse_ratio(text).map_err(err)?.into_pyobject(py)?.into_any().unbind(),
        "buffer" => {
            let (k, v) = match units::parse_buffer(text).map_err(err)? {
                Buffer::Bytes(b) => ("bytes", b as f64),
                Buffer::Packets(p) => ("pkts", p as f64),
                Buffer::Bdp(x) => ("bdp", x),
            };
            (k, v).into_pyobject(py)?.into_any().unbind()
        }
        _ => return Err(err(format!("unknown unit kind {kind:?}"))),
    })
}

/// Read, check and resolve a scenario document (the TOML document as Python
/// objects, `--set` overrides applied) with the scenario language
/// (`bloatlab_schema::language`). `read_trace(file)` gives a trace file's
/// bytes, or a str saying why it cannot. Returns `(resolved, start_jitter_ns,
/// resolved_json)`: the resolved scenario as Python objects and as the JSON
/// text an engine reads (made here at a tenth of `json.dumps`'s cost); an
/// error in the scenario is a ValueError whose args are `(key, message)`.
#[pyfunction]
#[pyo3(signature = (doc, name, read_trace, mem_available=None))]
fn resolve_scenario<'py>(
    py: Python<'py>,
    doc: Bound<'py, PyAny>,
    name: &str,
    read_trace: Bound<'py, PyAny>,
    mem_available: Option<u64>,
) -> PyResult<(Bound<'py, PyAny>, Option<u64>, String)> {
    use bloatlab_schema::language::{resolve_document, Context};
    let doc: serde_json::Value = pythonize::depythonize(&doc)
        .map_err(|e| PyValueError::new_err(("", format!("not a scenario document: {e} (the language has tables, strings, numbers, booleans and lists)"))))?;
    let read = |file: &str| -> Result<Vec<u8>, String> {
        match read_trace.call1((file,)) {
            Ok(r) => match r.extract::<Vec<u8>>() {
                Ok(b) if r.is_instance_of::<pyo3::types::PyBytes>() => Ok(b),
                _ => Err(r.str().map(|s| s.to_string()).unwrap_or_else(|_| "cannot read the trace".into())),
            },
            Err(e) => Err(e.value(py).str().map(|s| s.to_string()).unwrap_or_else(|_| "cannot read the trace".into())),
        }
    };
    let ctx = Context { name, read_trace: &read, mem_available };
    let (sc, jitter) = resolve_document(&doc, &ctx).map_err(|e| PyValueError::new_err((e.key, e.message)))?;
    let text = serde_json::to_string(&sc).map_err(|e| PyValueError::new_err(("", e.to_string())))?;
    Ok((pythonize::pythonize(py, &sc)?, jitter, text))
}

/// The JSON Schema of the scenario language (a dict).
#[pyfunction]
fn scenario_schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    Ok(pythonize::pythonize(py, &bloatlab_schema::language::json_schema())?)
}

/// `[[expect]]` tables (an experiment file's) checked as a scenario's are:
/// [{check, min, convergence_sec}] (convergence_sec defaulted); a ValueError
/// with args `(key, message)` otherwise.
#[pyfunction]
fn scenario_expect<'py>(py: Python<'py>, tables: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    use bloatlab_schema::language::{expectations, tables::DEFAULT_CONVERGENCE_S};
    let v: serde_json::Value = pythonize::depythonize(&tables).map_err(|e| PyValueError::new_err(("expect", format!("not tables: {e}"))))?;
    let list = expectations(&v).map_err(|e| PyValueError::new_err((e.key, e.message)))?;
    let out = PyList::empty(py);
    for e in list {
        let d = PyDict::new(py);
        d.set_item("check", e.check.value)?;
        d.set_item("min", e.min.value)?;
        d.set_item("convergence_sec", e.convergence_sec.map_or(DEFAULT_CONVERGENCE_S, |c| c.value))?;
        out.append(d)?;
    }
    Ok(out)
}

/// Each table's keys: {"TOP_KEYS": [...], "FLOW_KEYS": [...], ...}.
#[pyfunction]
fn scenario_keys() -> Vec<(&'static str, Vec<String>)> {
    bloatlab_schema::language::tables::key_names()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // the model's jiffy (Linux CONFIG_HZ of the reference kernel): advise's ensemble starts its members across one
    m.add("NS_PER_JIFFY", bloatlab_core::kernel::NS_PER_JIFFY)?;
    m.add_function(wrap_pyfunction!(run_sim, m)?)?;
    m.add_class::<ArrowTable>()?;
    m.add_function(wrap_pyfunction!(check_sim, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(qdiscs, m)?)?;
    m.add_function(wrap_pyfunction!(ccs, m)?)?;
    m.add_function(wrap_pyfunction!(parse_unit, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_expect, m)?)?;
    Ok(())
}
