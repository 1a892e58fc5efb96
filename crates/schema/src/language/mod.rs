//! The scenario language (docs/scenario.md), written once: the TOML file a
//! user writes, read, checked and resolved into the scenario both engines
//! run ([`crate::scenario::Scenario`]). Python calls it through the native
//! module (`bloatlab.scenario`), after applying its `--set` overrides to the
//! document; `bloatlab scenarios --schema` prints its JSON Schema.
//!
//! - [`tables`]: each table of the language as a struct (keys, types,
//!   defaults, descriptions); serde reads a document into them and schemars
//!   writes their JSON Schema.
//! - [`check`]: the values (units, ranges, names), each to base units or to
//!   the message saying what was expected.
//! - [`value`]: the document read through serde with the language's error
//!   type, so that every error is in the language's words at its key path
//!   (`flow.0.cc: unknown value "cubc" (expected one of: ...)`).
//! - [`resolve`]: the rules across values, and the resolved scenario.
//!
//! Every error is a [`LanguageError`]: the dotted key path and the message.

pub mod check;
pub mod resolve;
pub mod tables;
pub mod value;

use bloatlab_core::qdisc::{self, ParamKind};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use value::{py_repr, LangError, ValueDe};

pub use resolve::{Context, SERIES_ROW_BYTES};
pub use tables::Document;

/// An error in a scenario: where (`flow.0.rtt`, empty for the whole
/// document) and what, in the language's words.
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageError {
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for LanguageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// Read and resolve a document (a TOML document as a JSON value).
pub fn resolve_document(doc: &Value, ctx: &Context) -> Result<(crate::scenario::Scenario, Option<u64>), LanguageError> {
    let m = validate(doc)?;
    resolve::resolve(&m, doc, ctx)
}

/// The document read into the language's tables, with every key and value
/// checked that can be checked alone.
pub fn validate(doc: &Value) -> Result<Document, LanguageError> {
    let m: Document = read(doc)?;
    check_tables(&m, doc)?;
    Ok(m)
}

/// `doc` read into `T` through serde, an error worded at its key path.
fn read<T: serde::de::DeserializeOwned>(doc: &Value) -> Result<T, LanguageError> {
    serde_path_to_error::deserialize(ValueDe(doc)).map_err(|e| {
        let path: Vec<String> = e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        worded(path, e.into_inner())
    })
}

fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// A serde error at `path` in the language's words.
fn worded(mut path: Vec<String>, e: LangError) -> LanguageError {
    match e {
        LangError::Message(message) => LanguageError { key: dotted(&path), message },
        LangError::UnknownKey { key, known } => {
            if path.last() == Some(&key) {
                path.pop();
            }
            let message = tables::unknown_message(&path, &known);
            path.push(key);
            LanguageError { key: dotted(&path), message }
        }
        LangError::Missing(key) => {
            let message = tables::missing_message(&path, &key);
            path.push(key);
            LanguageError { key: dotted(&path), message }
        }
        LangError::NotTable { got, .. } => LanguageError { key: dotted(&path), message: tables::not_table_message(&path, &got) },
    }
}

/// What the tables need beyond their keys' values: a `[[page]]` gives its
/// objects one way, `[wifi]` has a station, qdisc parameters are the named
/// qdisc's.
fn check_tables(m: &Document, doc: &Value) -> Result<(), LanguageError> {
    for (i, pg) in m.page.iter().enumerate() {
        let p = format!("page.{i}");
        if pg.sizes.is_some() && (pg.objects.is_some() || pg.size.is_some()) {
            return Err(LanguageError {
                key: format!("{p}.sizes"),
                message: "give either sizes (each object's) or objects and size (the page's total), not both".into(),
            });
        }
        if pg.sizes.is_none() {
            for (k, given) in [("objects", pg.objects.is_some()), ("size", pg.size.is_some())] {
                if !given {
                    return Err(LanguageError {
                        key: format!("{p}.{k}"),
                        message: "missing (e.g. objects = 62 and size = \"1.8MB\", or sizes = [\"30KB\", ...])".into(),
                    });
                }
            }
        }
        if let Some(s) = &pg.sizes {
            if s.is_empty() || s.len() as i128 > tables::MAX_PAGE_OBJECTS {
                return Err(LanguageError { key: format!("{p}.sizes"), message: tables::not_table_message(&["page".into(), i.to_string(), "sizes".into()], "") });
            }
        }
    }
    if let Some(links) = &m.link {
        for (d, l) in [("down", &links.down), ("up", &links.up)] {
            if let Some(l) = l {
                qdisc_params(&format!("link.{d}"), &l.qdisc.value, l.qdisc_params.as_ref())?;
            }
        }
    }
    check_expect(&m.expect)?;
    if let Some(w) = &m.wifi {
        if w.station.is_empty() {
            return Err(LanguageError { key: "wifi.station".into(), message: tables::missing_message(&["wifi".into()], "station") });
        }
        qdisc_params("wifi", &w.qdisc.value, w.qdisc_params.as_ref())?;
    }
    let _ = doc;
    Ok(())
}

fn check_expect(expect: &[tables::Expect]) -> Result<(), LanguageError> {
    for (i, e) in expect.iter().enumerate() {
        if e.convergence_sec.is_some() && !matches!(e.check.value.as_str(), "fairness" | "convergence_fairness") {
            return Err(LanguageError { key: format!("expect.{i}.convergence_sec"), message: "only fairness and convergence_fairness take it".into() });
        }
    }
    Ok(())
}

/// `[[expect]]` tables alone (an experiment file's, docs/study.md), checked
/// as a scenario's are; their errors are named `expect.N.KEY`.
pub fn expectations(v: &Value) -> Result<Vec<tables::Expect>, LanguageError> {
    let doc = json!({ "expect": v });
    #[derive(serde::Deserialize)]
    struct Only {
        #[serde(default)]
        expect: Vec<tables::Expect>,
    }
    let only: Only = read(&doc)?;
    check_expect(&only.expect)?;
    Ok(only.expect)
}

/// A qdisc's `qdisc_params` in base units (the core's table: ns, bytes,
/// bit/s, 0/1, a choice's index), each checked by its kind; the core checks
/// the ranges when it builds the qdisc.
pub fn qdisc_params(at: &str, kind: &str, given: Option<&Value>) -> Result<BTreeMap<String, f64>, LanguageError> {
    let mut out = BTreeMap::new();
    let Some(given) = given else {
        return Ok(out);
    };
    let here = format!("{at}.qdisc_params");
    let Value::Object(table) = given else {
        return Err(LanguageError { key: here, message: format!("expected a table, got {}", py_repr(given)) });
    };
    let specs = qdisc::params(kind).unwrap_or(&[]);
    for (k, v) in table {
        let key = format!("{here}.{k}");
        let Some(spec) = specs.iter().find(|s| s.name == k) else {
            let mut known: Vec<&str> = specs.iter().map(|s| s.name).collect();
            known.sort();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(LanguageError { key, message: format!("unknown parameter of {kind} (known: {known})") });
        };
        let x = param_value(spec.kind, spec.min, spec.max, v).map_err(|message| LanguageError { key: key.clone(), message })?;
        out.insert(k.clone(), x);
    }
    Ok(out)
}

fn param_value(kind: ParamKind, min: f64, max: f64, v: &Value) -> check::Check<f64> {
    Ok(match kind {
        ParamKind::Time => check::duration(v)? as f64,
        ParamKind::Size => check::size(v)? as f64,
        ParamKind::Rate => {
            if v == &json!(0) || v == &json!("0") {
                0.0
            } else {
                check::rate(v)? as f64
            }
        }
        ParamKind::Ratio => check::ratio(v)?,
        ParamKind::Bool => f64::from(u8::from(check::boolean(v)?)),
        ParamKind::Count => check::whole(v, min as i128, Some(max as i128))? as f64,
        ParamKind::Choice(choices) => {
            let c = check::choice(v, choices)?;
            choices.iter().position(|x| *x == c).unwrap_or(0) as f64
        }
    })
}

fn param_schema(kind: ParamKind, min: f64, max: f64) -> Value {
    match kind {
        ParamKind::Time => json!({"type": "string", "description": "a duration: \"10ms\", \"1.5s\", \"2min\" (ns, us, ms, s, min)"}),
        ParamKind::Size => json!({"type": ["string", "integer"], "description": "a size in bytes, SI: \"375KB\", \"1.5MB\", \"64KiB\", or a whole number of bytes"}),
        ParamKind::Rate => json!({"anyOf": [{"type": "string", "description": "a rate in bit/s, SI like tc: \"100Mbit\""}, {"const": 0}]}),
        ParamKind::Ratio => json!({"type": ["string", "number"], "description": "a fraction: \"1%\" or 0.01"}),
        ParamKind::Bool => json!({"type": "boolean"}),
        ParamKind::Count => json!({"type": "integer", "minimum": min as i64, "maximum": max as i64}),
        ParamKind::Choice(c) => json!({"type": "string", "enum": c}),
    }
}

fn default_text(kind: ParamKind, default: f64) -> String {
    match kind {
        ParamKind::Choice(c) => c.get(default as usize).copied().unwrap_or("").to_string(),
        ParamKind::Time => format!("{}ms", check::general(default / 1e6)),
        ParamKind::Bool => if default != 0.0 { "true" } else { "false" }.into(),
        _ => check::general(default),
    }
}

/// The JSON Schema of the TOML language (docs/schema/scenario-toml.schema.json):
/// the tables' schema, with `qdisc_params` checked against the named qdisc's
/// parameters (one definition per qdisc of the core's table).
pub fn json_schema() -> Value {
    let settings = schemars::gen::SchemaSettings::draft2019_09().with(|s| {
        s.option_nullable = false;
        s.option_add_null_type = false;
        s.definitions_path = "#/$defs/".into();
    });
    let root = settings.into_generator().into_root_schema_for::<Document>();
    let mut schema = serde_json::to_value(root).expect("a schema serializes");
    // schemars 0.8 writes its definitions under "definitions" whatever the path its references use
    if let Some(defs) = schema.as_object_mut().and_then(|o| o.remove("definitions")) {
        schema["$defs"] = defs;
    }
    let defs = schema.get_mut("$defs").and_then(Value::as_object_mut).expect("the schema has $defs");
    let mut rules = Vec::new();
    for q in qdisc::QdiscKind::all() {
        let mut props = Map::new();
        for p in q.params() {
            let mut s = param_schema(p.kind, p.min, p.max);
            s["description"] = json!(format!("{} (default {})", p.doc, default_text(p.kind, p.default)));
            props.insert(p.name.to_string(), s);
        }
        let def = format!("QdiscParams_{}", q.name());
        defs.insert(def.clone(), json!({"type": "object", "description": format!("qdisc_params of {}: {}", q.name(), q.doc()),
            "properties": props, "additionalProperties": false}));
        let when = if q.name() == "fifo" {
            json!({"anyOf": [{"properties": {"qdisc": {"const": "fifo"}}, "required": ["qdisc"]}, {"not": {"required": ["qdisc"]}}]})
        } else {
            json!({"properties": {"qdisc": {"const": q.name()}}, "required": ["qdisc"]})
        };
        rules.push(json!({"if": when, "then": {"properties": {"qdisc_params": {"$ref": format!("#/$defs/{def}")}}}}));
    }
    for table in ["Link", "Wifi"] {
        if let Some(t) = defs.get_mut(table) {
            t["allOf"] = json!(rules);
            t["properties"]["qdisc_params"] = json!({"type": "object", "description": "the qdisc's parameters (by `qdisc`: `bloatlab qdiscs` lists them)"});
        }
    }
    let mut out = Map::new();
    out.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    for (k, v) in schema.as_object().expect("an object").iter() {
        if k != "$schema" {
            out.insert(k.clone(), v.clone());
        }
    }
    let mut out = Value::Object(out);
    whole_bounds(&mut out);
    out
}

/// schemars holds numeric bounds as floats: a whole bound is written whole
/// (`"maximum": 64`, not `64.0`; i64::MAX exactly).
fn whole_bounds(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if matches!(k.as_str(), "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum") {
                    if let Some(f) = x.as_f64() {
                        if f.fract() == 0.0 && x.is_f64() {
                            *x = if f >= i64::MAX as f64 { json!(i64::MAX) } else { json!(f as i64) };
                        }
                    }
                } else {
                    whole_bounds(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(whole_bounds),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
