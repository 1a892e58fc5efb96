//! The thin PyO3 binding: converts types, holds no logic. Python imports it as
//! `bloatlab._native`.

use bloatlab_core::qdisc::{ParamKind, QDISCS};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Run the simulator on a resolved scenario (JSON, docs/engine-interface.md);
/// returns the raw result as JSON. Releases the GIL while simulating.
#[pyfunction]
fn run_sim(py: Python<'_>, resolved_json: &str) -> PyResult<String> {
    let json = resolved_json.to_owned();
    py.allow_threads(move || bloatlab_sim::run_json(&json)).map_err(PyValueError::new_err)
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
    for c in bloatlab_core::cc::CATALOG {
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

/// The qdisc table: [{name, doc, params: [{name, kind, default, doc}]}].
#[pyfunction]
fn qdiscs(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for q in QDISCS {
        let d = PyDict::new(py);
        d.set_item("name", q.name)?;
        d.set_item("doc", q.doc)?;
        let ps = PyList::empty(py);
        for p in q.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("kind", kind_str(p.kind))?;
            pd.set_item("default", p.default)?;
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_sim, m)?)?;
    m.add_function(wrap_pyfunction!(check_sim, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(qdiscs, m)?)?;
    m.add_function(wrap_pyfunction!(ccs, m)?)?;
    m.add_function(wrap_pyfunction!(parse_unit, m)?)?;
    Ok(())
}
