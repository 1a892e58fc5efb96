//! A TOML document (as a JSON value: what `tomllib` gives Python, or what the
//! `toml` crate gives Rust) read through serde with the language's own error
//! type, so that the tables' derived `Deserialize` reports an unknown key, a
//! missing key or a value of the wrong shape in the scenario layer's words
//! ([`LangError`]), and `serde_path_to_error` adds the key path.
//!
//! Also the echo of a bad value in a message as Python writes it (`repr`):
//! users of the Python API pass Python values, and the messages have always
//! echoed them that way (`got 'x'`, `got True`, `got 3.5`).

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// What went wrong at one place of the document (the place is added by
/// `serde_path_to_error`): a message, or a structural error the language
/// words by the table it occurred in ([`super::tables`]).
#[derive(Debug, Clone, PartialEq)]
pub enum LangError {
    /// A value's checker said this (the whole message).
    Message(String),
    /// A key the table does not have; `known` its keys.
    UnknownKey { key: String, known: Vec<String> },
    /// A key the table needs.
    Missing(String),
    /// Not a table (`expected` is serde's name of what was wanted), or not a list of them.
    NotTable { got: String, expected: String },
}

impl fmt::Display for LangError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LangError::Message(m) => f.write_str(m),
            LangError::UnknownKey { key, known } => write!(f, "unknown key \"{key}\" (known here: {})", known.join(", ")),
            LangError::Missing(k) => write!(f, "missing key {k}"),
            LangError::NotTable { got, expected } => write!(f, "expected {expected}, got {got}"),
        }
    }
}

impl std::error::Error for LangError {}

impl de::Error for LangError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        LangError::Message(msg.to_string())
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        let mut known: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        known.sort();
        LangError::UnknownKey { key: field.to_string(), known }
    }
    fn missing_field(field: &'static str) -> Self {
        LangError::Missing(field.to_string())
    }
    fn invalid_type(unexp: de::Unexpected, exp: &dyn de::Expected) -> Self {
        LangError::NotTable { got: unexpected_repr(&unexp), expected: exp.to_string() }
    }
}

fn unexpected_repr(u: &de::Unexpected) -> String {
    match u {
        de::Unexpected::Bool(b) => py_repr(&Value::Bool(*b)),
        de::Unexpected::Signed(i) => i.to_string(),
        de::Unexpected::Unsigned(i) => i.to_string(),
        de::Unexpected::Float(x) => float_repr(*x),
        de::Unexpected::Str(s) => py_repr(&Value::String(s.to_string())),
        de::Unexpected::Unit | de::Unexpected::Option => "None".into(),
        de::Unexpected::Seq => "a list".into(),
        de::Unexpected::Map => "a table".into(),
        other => other.to_string(),
    }
}

/// A float as Python's `repr` writes it (`3.0`, `0.5`, `1e-05`, `1e+20`).
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let s = format!("{x:e}"); // "1e20", "1.5e-5"
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = if let Some(d) = e.strip_prefix('-') { ('-', d) } else { ('+', e) };
        return format!("{m}e{sign}{digits:0>2}");
    }
    if x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A value as Python's `repr` writes it: `'x'`, `True`, `None`, `3`, `3.5`, `[1, 2]`, `{'a': 1}`.
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => number_repr(n),
        Value::String(s) => str_repr(s),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!("{{{}}}", m.iter().map(|(k, v)| format!("{}: {}", str_repr(k), py_repr(v))).collect::<Vec<_>>().join(", ")),
    }
}

fn number_repr(n: &Number) -> String {
    if n.is_f64() {
        float_repr(n.as_f64().unwrap_or(f64::NAN))
    } else {
        n.to_string()
    }
}

fn str_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// A bad value for a message, as `units.echo` gives it: a string as it is
/// (cut to 60 characters), anything else as its `repr` (cut alike).
pub fn echo(v: &Value) -> String {
    match v {
        Value::String(s) => bloatlab_core::units::echo(s),
        other => bloatlab_core::units::echo(&py_repr(other)),
    }
}

/// The deserializer over one value of the document.
pub struct ValueDe<'a>(pub &'a Value);

impl<'de, 'a> de::Deserializer<'de> for ValueDe<'a> {
    type Error = LangError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LangError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_str(s),
            Value::Array(a) => visitor.visit_seq(Seq(a.iter())),
            Value::Object(m) => visitor.visit_map(Table { iter: m.iter(), next: None }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LangError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(self, _name: &'static str, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, LangError> {
        match self.0 {
            Value::Object(m) => visitor.visit_map(Table { iter: m.iter(), next: None }),
            other => Err(LangError::NotTable { got: py_repr(other), expected: "a table".into() }),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LangError> {
        match self.0 {
            Value::Array(a) => visitor.visit_seq(Seq(a.iter())),
            other => Err(LangError::NotTable { got: py_repr(other), expected: "a list".into() }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct tuple
        tuple_struct map enum identifier ignored_any
    }
}

struct Seq<'a>(std::slice::Iter<'a, Value>);

impl<'de, 'a> SeqAccess<'de> for Seq<'a> {
    type Error = LangError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, LangError> {
        match self.0.next() {
            Some(v) => seed.deserialize(ValueDe(v)).map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Table<'a> {
    iter: serde_json::map::Iter<'a>,
    next: Option<&'a Value>,
}

impl<'de, 'a> MapAccess<'de> for Table<'a> {
    type Error = LangError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, LangError> {
        match self.iter.next() {
            Some((k, v)) => {
                self.next = Some(v);
                let key: de::value::StrDeserializer<'_, LangError> = k.as_str().into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, LangError> {
        let v = self.next.take().expect("a value follows its key");
        seed.deserialize(ValueDe(v))
    }
}

/// A table's keys in the document's order (for messages that list what was given).
pub fn keys(m: &Map<String, Value>) -> Vec<&str> {
    m.keys().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_echoed_as_python_writes_them() {
        assert_eq!(py_repr(&Value::String("x".into())), "'x'");
        assert_eq!(py_repr(&Value::String("it's".into())), "\"it's\"");
        assert_eq!(py_repr(&Value::Bool(true)), "True");
        assert_eq!(py_repr(&serde_json::json!(3)), "3");
        assert_eq!(py_repr(&serde_json::json!(3.0)), "3.0");
        assert_eq!(py_repr(&serde_json::json!(0.5)), "0.5");
        assert_eq!(py_repr(&serde_json::json!(1e20)), "1e+20");
        assert_eq!(py_repr(&serde_json::json!(1.5e-5)), "1.5e-05");
        assert_eq!(py_repr(&serde_json::json!([1, "a"])), "[1, 'a']");
        assert_eq!(py_repr(&serde_json::json!({"a": null})), "{'a': None}");
    }
}
