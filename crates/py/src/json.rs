//! Python objects to the text `json.dumps(obj, indent=N, default=f)` gives,
//! byte for byte, in one pass without the interpreter (Python's `json` has no
//! C path with `indent`: the 1000-flow summary took ~16 ms there, ~1 ms here).
//!
//! The rules are `json.encoder._make_iterencode`'s (CPython 3.11) with its
//! defaults: `ensure_ascii` (every non-ASCII character as `\uXXXX`, lower-case
//! hex, a surrogate pair above U+FFFF), `allow_nan` (`NaN`, `Infinity`,
//! `-Infinity`), keys in insertion order, `", "`-less separators (`","` then
//! a new line, `": "`), `[]`/`{}` for empty containers. The types are tested
//! in its order (str, None, True, False, int, float, list or tuple, dict,
//! else `default`); an int or float subclass is written as the int or float
//! it is (`int.__repr__`, `float.__repr__`), a key as str, float, bool, None
//! or int. What it does not take — a `str` with lone surrogates, a key of
//! another type, a cycle or nesting deeper than [`MAX_DEPTH`], an error in
//! `default` — is an `Err`; the Python caller then lets `json` do it, so the
//! result (or the exception) is `json`'s in every case.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting deeper than this is left to `json` (which finds cycles).
pub const MAX_DEPTH: usize = 200;

pub struct Encoder<'py> {
    indent: usize,
    default: Option<Bound<'py, PyAny>>,
    out: String,
}

impl<'py> Encoder<'py> {
    pub fn new(indent: usize, default: Option<Bound<'py, PyAny>>) -> Self {
        Encoder { indent, default, out: String::with_capacity(1 << 16) }
    }

    /// The whole text of `obj`.
    pub fn encode(mut self, obj: &Bound<'py, PyAny>) -> PyResult<String> {
        self.value(obj, 0)?;
        Ok(self.out)
    }

    fn value(&mut self, o: &Bound<'py, PyAny>, level: usize) -> PyResult<()> {
        if level > MAX_DEPTH {
            return Err(PyValueError::new_err("nested too deeply for the native encoder"));
        }
        if let Ok(s) = o.downcast::<PyString>() {
            return string(&mut self.out, s);
        }
        if o.is_none() {
            self.out.push_str("null");
        } else if let Ok(b) = o.downcast::<PyBool>() {
            self.out.push_str(if b.is_true() { "true" } else { "false" });
        } else if let Ok(i) = o.downcast::<PyInt>() {
            int(&mut self.out, i)?;
        } else if let Ok(f) = o.downcast::<PyFloat>() {
            float(&mut self.out, f.value());
        } else if o.is_exact_instance_of::<PyList>() || o.is_exact_instance_of::<PyTuple>() {
            let items: Vec<Bound<'py, PyAny>> = o.try_iter()?.collect::<PyResult<_>>()?;
            self.list(&items, level)?;
        } else if o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>() {
            // a subclass: `for value in lst` as json does, after its `if not lst`
            let items: Vec<Bound<'py, PyAny>> = if o.is_truthy()? { o.try_iter()?.collect::<PyResult<_>>()? } else { Vec::new() };
            self.list(&items, level)?;
        } else if let Ok(d) = o.downcast_exact::<PyDict>() {
            let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = d.iter().collect();
            self.dict(&items, level)?;
        } else if o.is_instance_of::<PyDict>() {
            // a subclass (OrderedDict, ...): its items() as json reads them
            let mut items = Vec::new();
            if o.is_truthy()? {
                for kv in o.call_method0("items")?.try_iter()? {
                    items.push(kv?.extract::<(Bound<'py, PyAny>, Bound<'py, PyAny>)>()?);
                }
            }
            self.dict(&items, level)?;
        } else {
            let Some(default) = self.default.clone() else {
                return Err(PyValueError::new_err("not JSON serializable without a default"));
            };
            let r = default.call1((o,))?;
            self.value(&r, level + 1)?;
        }
        Ok(())
    }

    fn newline(&mut self, level: usize) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat(' ').take(self.indent * level));
    }

    fn list(&mut self, items: &[Bound<'py, PyAny>], level: usize) -> PyResult<()> {
        if items.is_empty() {
            self.out.push_str("[]");
            return Ok(());
        }
        self.out.push('[');
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(level + 1);
            self.value(v, level + 1)?;
        }
        self.newline(level);
        self.out.push(']');
        Ok(())
    }

    fn dict(&mut self, items: &[(Bound<'py, PyAny>, Bound<'py, PyAny>)], level: usize) -> PyResult<()> {
        if items.is_empty() {
            self.out.push_str("{}");
            return Ok(());
        }
        self.out.push('{');
        for (i, (k, v)) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(level + 1);
            // json's key rules: str; float; True, False, None; int; anything else is its TypeError
            if let Ok(s) = k.downcast::<PyString>() {
                string(&mut self.out, s)?;
            } else {
                let mut key = String::new();
                if let Ok(f) = k.downcast::<PyFloat>() {
                    float(&mut key, f.value());
                } else if let Ok(b) = k.downcast::<PyBool>() {
                    key.push_str(if b.is_true() { "true" } else { "false" });
                } else if k.is_none() {
                    key.push_str("null");
                } else if let Ok(n) = k.downcast::<PyInt>() {
                    int(&mut key, n)?;
                } else {
                    return Err(PyValueError::new_err("a key json does not take"));
                }
                self.out.push('"');
                self.out.push_str(&key);
                self.out.push('"');
            }
            self.out.push_str(": ");
            self.value(v, level + 1)?;
        }
        self.newline(level);
        self.out.push('}');
        Ok(())
    }
}

/// `int.__repr__`.
fn int(out: &mut String, i: &Bound<'_, PyInt>) -> PyResult<()> {
    use std::fmt::Write;
    if let Ok(v) = i.extract::<i64>() {
        let _ = write!(out, "{v}");
    } else {
        let r = i.py().get_type::<PyInt>().call_method1("__repr__", (i,))?;
        out.push_str(r.downcast::<PyString>()?.to_str()?);
    }
    Ok(())
}

/// `float.__repr__` (and json's `NaN`, `Infinity`, `-Infinity`): the
/// shortest digits that read back as `x` (Rust's `{:e}` gives the same
/// digits as Python's repr: the shortest, and of those the closest), in
/// fixed notation when the decimal point falls within 16 digits before or 4
/// after the first digit (`repr` 'r' mode: `decpt <= -4 || decpt > 16` is
/// exponential), `.0` added to a whole number, the exponent signed and of at
/// least two digits (`1e+16`, `1.5e-05`).
pub fn float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    use std::fmt::Write;
    let mut e = Small::default();
    let _ = write!(e, "{x:e}");
    let (mant, exp) = e.as_str().split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is a number");
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let mut digits = Small::default();
    for c in mant.chars().filter(|&c| c != '.') {
        let _ = digits.write_char(c);
    }
    let mut exp = exp;
    if digits.len >= 16 {
        if let Some((d, e)) = even_of_a_tie(x.abs(), digits.len) {
            digits = Small::default();
            let _ = digits.write_str(&d);
            exp = e;
        }
    }
    let digits = digits.as_str();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    if neg {
        out.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat('0').take((-decpt) as usize));
        out.push_str(&digits);
    } else if decpt < n {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(&digits);
        out.extend(std::iter::repeat('0').take((decpt - n) as usize));
        out.push_str(".0");
    }
}

/// A float's text on the stack (`{:e}` of an f64 is at most 24 bytes).
struct Small {
    buf: [u8; 40],
    len: usize,
}

impl Default for Small {
    fn default() -> Self {
        Small { buf: [0; 40], len: 0 }
    }
}

impl Small {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).expect("ASCII written")
    }
}

impl std::fmt::Write for Small {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Python's repr rounds a tie half to even where `{:e}` rounds it up: when
/// `x` lies exactly halfway between two `n`-digit decimals (it is then
/// `t * 10^q` with `t` of `n + 1` digits ending in 5; only possible with
/// 16 or 17 digits, the two neighbours' spacing being within an ulp), the
/// digits of the even one and its exponent (`{:e}`'s, of the first digit).
fn even_of_a_tie(x: f64, n: usize) -> Option<(String, i32)> {
    let bits = x.to_bits();
    let (field, frac) = ((bits >> 52) & 0x7ff, bits & ((1u64 << 52) - 1));
    let (m, e) = if field == 0 { (frac, -1074i32) } else { (frac | 1 << 52, field as i32 - 1075) };
    if m == 0 {
        return None;
    }
    let tz = m.trailing_zeros();
    let (m, e) = ((m >> tz) as u128, e + tz as i32);
    // x = m * 2^e with m odd; x = t * 10^q with t odd means q = e and t = m / 5^e (e >= 0) or m * 5^-e
    let (t, q) = if e >= 0 {
        let p5 = 5u128.checked_pow(e as u32)?;
        if m % p5 != 0 {
            return None;
        }
        (m / p5, e)
    } else {
        (m.checked_mul(5u128.checked_pow(e.unsigned_abs())?)?, e)
    };
    if t % 10 != 5 || t.to_string().len() != n + 1 {
        return None;
    }
    let lo = t / 10;
    let mut d = if lo % 2 == 0 { lo } else { lo + 1 };
    let mut q = q + 1; // x's neighbour is d * 10^q
    while d % 10 == 0 {
        d /= 10;
        q += 1;
    }
    let s = d.to_string();
    let e10 = q + s.len() as i32 - 1;
    Some((s, e10))
}

/// `json.encoder.encode_basestring_ascii`.
fn string(out: &mut String, s: &Bound<'_, PyString>) -> PyResult<()> {
    use std::fmt::Write;
    let s = s.to_str()?; // an error for lone surrogates: json writes those
    out.push('"');
    if s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') {
        out.push_str(s);
        out.push('"');
        return Ok(());
    }
    let mut plain = 0; // start of the run of characters written as they are
    for (i, c) in s.char_indices() {
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            ' '..='~' => continue,
            _ => None,
        };
        out.push_str(&s[plain..i]);
        plain = i + c.len_utf8();
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push_str(&s[plain..]);
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::float;

    fn f(x: f64) -> String {
        let mut s = String::new();
        float(&mut s, x);
        s
    }

    #[test]
    fn floats_are_written_as_python_reprs_them() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (861.2958848, "861.2958848"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.0011036855687156753, "0.0011036855687156753"),
            (196.77480000000028, "196.77480000000028"),
            // halfway between two 17-digit decimals: Python keeps the even one
            (1059438285926254.25, "1059438285926254.2"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (x, want) in cases {
            assert_eq!(f(x), want, "{x:?}");
        }
    }
}
