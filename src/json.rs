//! A small, lenient JSON reader for `zarr.json` documents.
//!
//! Why not serde_json: real writers (zarr-python, xarray) emit bare `NaN`,
//! `Infinity` and `-Infinity` tokens, which strict parsers reject; CDL needs
//! the attribute order as written; and the NZ type mapping needs to know
//! whether a number was written as an integer or a float.
//!
//! Invariants:
//! - objects keep their members in document order (duplicates: last wins on
//!   [`Value::get`], as most parsers do);
//! - integers that fit `i64` are [`Value::Int`], larger non-negative ones
//!   that fit `u64` are [`Value::UInt`], everything else is [`Value::Float`];
//! - nesting is limited to [`MAX_DEPTH`] so hostile input cannot overflow the
//!   stack;
//! - [`parse_limited`] keeps chosen objects (a node's attributes) within a
//!   size, leaving the rest out unbuilt (child module `limited`).

use std::fmt;

mod limited;
pub use limited::{Limits, parse_limited};

/// Deepest nesting accepted; deeper documents are rejected, not recursed.
pub const MAX_DEPTH: usize = 128;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// A non-negative integer past `i64` that fits `u64`.
    UInt(u64),
    /// Any other number (`NaN` and the infinities included).
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, its members in document order.
    Object(Vec<(String, Value)>),
}

/// Why a document could not be parsed, with the byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {reason}")]
pub struct JsonError {
    /// The byte offset where parsing stopped.
    pub offset: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

impl Value {
    /// The member `key` of an object (the last one if repeated).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The members of an object, in document order.
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// A non-negative integer, whatever its JSON spelling (`3`, never `3.0`).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(i) => u64::try_from(i).ok(),
            Value::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// Any number as `f64` (integers may round).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::UInt(u) => Some(u as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    /// A short name of the JSON type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) | Value::UInt(_) => "integer",
            Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl fmt::Display for Value {
    /// Compact JSON text; non-finite floats are written as bare tokens, the
    /// way zarr-python writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::UInt(u) => write!(f, "{u}"),
            Value::Float(x) if x.is_nan() => f.write_str("NaN"),
            Value::Float(x) if x.is_infinite() => f.write_str(if *x > 0.0 { "Infinity" } else { "-Infinity" }),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write_json_string(f, s),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Object(members) => {
                f.write_str("{")?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_json_string(f, k)?;
                    write!(f, ":{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

fn write_json_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Parse one JSON document (surrounding whitespace allowed).
pub fn parse(text: &[u8]) -> Result<Value, JsonError> {
    parse_with(text, None).map(|(v, _)| v)
}

fn parse_with(text: &[u8], limits: Option<&Limits>) -> Result<(Value, usize), JsonError> {
    let mut p = Parser {
        s: text,
        i: 0,
        limits,
        left_out: 0,
    };
    p.skip_ws();
    let v = p.value_in(0, limits.is_some_and(|l| l.root))?;
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters after the document"));
    }
    Ok((v, p.left_out))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    limits: Option<&'a Limits>,
    /// Bytes of text in members left out of limited objects.
    left_out: usize,
}

impl Parser<'_> {
    fn err(&self, reason: &'static str) -> JsonError {
        JsonError { offset: self.i, reason }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.value_in(depth, false)
    }

    /// A value; an object is kept within the limits when `limited`.
    fn value_in(&mut self, depth: usize, limited: bool) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') if limited => self.limited_object(depth),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(b'n') if self.eat(b"null") => Ok(Value::Null),
            Some(b'N') if self.eat(b"NaN") => Ok(Value::Float(f64::NAN)),
            Some(b'I') if self.eat(b"Infinity") => Ok(Value::Float(f64::INFINITY)),
            Some(b'-') if self.eat(b"-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.i += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.eat(b"}") {
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.skip_ws();
            if !self.eat(b":") {
                return Err(self.err("expected ':'"));
            }
            self.skip_ws();
            let limited = self.limits.is_some_and(|l| (l.limited)(&key));
            let v = self.value_in(depth + 1, limited)?;
            members.push((key, v));
            self.skip_ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(b"}") {
                return Ok(Value::Object(members));
            }
            return Err(self.err("expected ',' or '}'"));
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b"]") {
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(b"]") {
                return Ok(Value::Array(items));
            }
            return Err(self.err("expected ',' or ']'"));
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self.s.get(self.i..self.i + 4).ok_or(self.err("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        let mut out = Vec::new();
        self.string_into(Some(&mut out))?;
        String::from_utf8(out).map_err(|_| self.err("string is not UTF-8"))
    }

    /// Check a string and move past it, building nothing.
    fn skip_string(&mut self) -> Result<(), JsonError> {
        let start = self.i;
        self.string_into(None)?;
        std::str::from_utf8(&self.s[start..self.i])
            .map(drop)
            .map_err(|_| self.err("string is not UTF-8"))
    }

    /// Read a string, its decoded bytes into `out` when given.
    fn string_into(&mut self, mut out: Option<&mut Vec<u8>>) -> Result<(), JsonError> {
        self.i += 1; // opening quote
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("unterminated escape"));
                    };
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) && self.eat(b"\\u") {
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("bad surrogate pair"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(code).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(self.err("unknown escape")),
                    };
                    if let Some(out) = out.as_deref_mut() {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
                0..=0x1f => return Err(self.err("control character in string")),
                _ => {
                    if let Some(out) = out.as_deref_mut() {
                        out.push(b);
                    }
                }
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.i;
        let mut is_int = true;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits_start = self.i;
        while let Some(b'0'..=b'9') = self.s.get(self.i) {
            self.i += 1;
        }
        if self.i == digits_start {
            return Err(self.err("expected digits"));
        }
        if self.s.get(self.i) == Some(&b'.') {
            is_int = false;
            self.i += 1;
            while let Some(b'0'..=b'9') = self.s.get(self.i) {
                self.i += 1;
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            is_int = false;
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            while let Some(b'0'..=b'9') = self.s.get(self.i) {
                self.i += 1;
            }
        }
        // The slice holds only ASCII digits, signs, '.', 'e'.
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("bad number"))?;
        if is_int {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Value::UInt(u));
            }
        }
        text.parse::<f64>()
            .map(Value::Float)
            .map_err(|_| self.err("bad number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_non_finite_tokens_are_floats() {
        let v = parse(br#"{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN"}"#).unwrap();
        assert!(matches!(v.get("a"), Some(Value::Float(x)) if x.is_nan()));
        assert_eq!(
            v.get("b").unwrap().as_array().unwrap(),
            &[Value::Float(f64::INFINITY), Value::Float(f64::NEG_INFINITY)]
        );
        assert_eq!(v.get("c"), Some(&Value::Str("NaN".into())));
    }

    #[test]
    fn integers_floats_and_order() {
        let v = parse(br#"{"z": 1, "a": 1.0, "m": 18446744073709551615, "n": -5e2}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m", "n"]);
        assert_eq!(v.get("z"), Some(&Value::Int(1)));
        assert_eq!(v.get("a"), Some(&Value::Float(1.0)));
        assert_eq!(v.get("m"), Some(&Value::UInt(u64::MAX)));
        assert_eq!(v.get("n"), Some(&Value::Float(-500.0)));
    }

    #[test]
    fn escapes_and_unicode() {
        let v = parse(br#""a\"b\\c\n\u00e9\ud83d\ude00""#).unwrap();
        assert_eq!(v, Value::Str("a\"b\\c\né😀".into()));
        assert_eq!(parse(v.to_string().as_bytes()).unwrap(), v);
    }

    #[test]
    fn rejects_garbage_and_deep_nesting() {
        for bad in [&b"{"[..], b"[1,]", b"{\"a\" 1}", b"nul", b"1 2", b"\"\x01\"", b""] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = "[".repeat(10_000);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().reason, "nesting too deep");
    }
}
