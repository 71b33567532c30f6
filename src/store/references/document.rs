//! A JSON reference set's text read into one entry per key, as fsspec's
//! reference spec has it: version 0 (the references themselves) and
//! version 1 (`refs`, `templates` and `gen`).
//!
//! Invariants: the structure of the document (not an object, an unknown
//! version, a `gen` entry that is not one) is an error for the whole set;
//! a bad value (bad base64, a template that does not render, a
//! non-integer offset) is an error for its own key only ([`Spec::Bad`]),
//! so the rest of the set mounts. At most [`MAX_REFERENCES`] keys come
//! out, counted before any `gen` entry is expanded.

use std::collections::HashMap;

use base64::Engine;

use super::template::{self, Scope, TemplateError, Val};
use crate::json::Value;

/// The most keys one JSON set may hold (each costs about 100 bytes held).
pub const MAX_REFERENCES: u64 = 1 << 20;

/// What is wrong with a set's document, or with one of its references.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("gen key: {0}")]
    GenKey(TemplateError),
    #[error("bad base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("{what} is not {expected}")]
    NotA { what: String, expected: &'static str },
    #[error("{what} without `{member}`")]
    Without { what: &'static str, member: &'static str },
    /// A number is shown; other values are not (a file that is not a
    /// reference set may hold a secret there).
    #[error("version {0} (nzfs reads 0 and 1)")]
    Version(String),
    #[error("`version` is a {0}, not 0 or 1")]
    VersionKind(&'static str),
    #[error("{0} references, more than the {MAX_REFERENCES} a JSON set may hold (write it as Parquet)")]
    TooMany(u64),
    #[error("a `gen` entry with {0} dimensions, more than {MAX_GEN_DIMENSIONS}")]
    TooManyDimensions(usize),
    #[error("dimension {name}: {problem}")]
    Dimension { name: String, problem: String },
    #[error("dimension {0} is neither a list nor a range")]
    NotADimension(String),
    #[error("a `gen` entry needs both `offset` and `length`, or neither")]
    OffsetWithoutLength,
    #[error("{0:?} is not an offset or length")]
    NotANumber(String),
    /// A reference that is none of the forms the spec allows.
    #[error("{0}")]
    BadReference(&'static str),
    #[error("a {0} is not a reference")]
    NotAReference(&'static str),
}

fn dimension(name: &str, problem: impl Into<String>) -> SetError {
    SetError::Dimension {
        name: name.to_string(),
        problem: problem.into(),
    }
}

fn not_a(what: impl Into<String>, expected: &'static str) -> SetError {
    SetError::NotA {
        what: what.into(),
        expected,
    }
}

/// What one key of the set refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    Inline(Vec<u8>),
    /// `span` is `(offset, length)`; `None` for the whole target.
    Url {
        url: String,
        span: Option<(u64, u64)>,
    },
    Bad(SetError),
}

/// An inline value: `base64:` data decoded, other text as its UTF-8 bytes.
pub fn inline(s: &str) -> Result<Vec<u8>, SetError> {
    match s.strip_prefix("base64:") {
        Some(b64) => Ok(base64::engine::general_purpose::STANDARD.decode(b64)?),
        None => Ok(s.as_bytes().to_vec()),
    }
}

/// The entries of a parsed set, in no particular order.
pub fn entries(doc: &Value) -> Result<Vec<(String, Spec)>, SetError> {
    let (refs, templates, gens) = match doc.get("version") {
        None => (doc, Vec::new(), &[][..]),
        Some(v) if v.as_u64() == Some(1) => {
            let templates = match doc.get("templates") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Object(t)) => t
                    .iter()
                    .map(|(k, v)| match v {
                        Value::Str(s) => Ok((k.clone(), s.clone())),
                        _ => Err(not_a(format!("template {k}"), "a string")),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Some(_) => return Err(not_a("`templates`", "an object")),
            };
            let gens = match doc.get("gen") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(g)) => &g[..],
                Some(_) => return Err(not_a("`gen`", "a list")),
            };
            let refs = doc.get("refs").ok_or(SetError::Without {
                what: "version 1",
                member: "refs",
            })?;
            (refs, templates, gens)
        }
        // A number is shown; other values are not (a file that is not a
        // reference set may hold a secret there).
        Some(v @ (Value::Int(_) | Value::UInt(_))) => return Err(SetError::Version(v.to_string())),
        Some(v) => return Err(SetError::VersionKind(v.kind())),
    };
    let Value::Object(refs) = refs else {
        return Err(not_a("the references", "an object"));
    };
    let scope: Scope = templates
        .iter()
        .map(|(k, v)| (k.as_str(), Val::Str(v.clone())))
        .collect();
    let mut total = refs.len() as u64;
    let mut gen_sizes = Vec::new();
    for g in gens {
        let n = gen_count(g)?;
        gen_sizes.push(n);
        total = total.saturating_add(n);
    }
    if total > MAX_REFERENCES {
        return Err(SetError::TooMany(total));
    }
    let mut out = Vec::with_capacity(total as usize);
    for (key, value) in refs {
        out.push((key.clone(), spec(value, &scope)));
    }
    for g in gens {
        expand(g, &scope, &mut out)?;
    }
    Ok(out)
}

fn spec(value: &Value, scope: &Scope) -> Spec {
    let bad = Spec::Bad;
    match value {
        Value::Str(s) => inline(s).map_or_else(bad, Spec::Inline),
        // fsspec writes a JSON object's text (some writers inline `.zattrs`).
        Value::Object(_) => Spec::Inline(value.to_string().into_bytes()),
        Value::Array(items) => {
            let Some(url) = items.first().and_then(Value::as_str) else {
                return Spec::Bad(SetError::BadReference("a reference must start with a URL"));
            };
            let url = if url.contains("{{") {
                match template::render(url, scope) {
                    Ok(u) => u,
                    Err(e) => return Spec::Bad(e.into()),
                }
            } else {
                url.to_string()
            };
            match items.len() {
                1 if url.starts_with("base64:") => inline(&url).map_or_else(bad, Spec::Inline),
                1 => Spec::Url { url, span: None },
                3 => match (items[1].as_u64(), items[2].as_u64()) {
                    (Some(o), Some(n)) => Spec::Url {
                        url,
                        span: Some((o, n)),
                    },
                    _ => Spec::Bad(SetError::BadReference(
                        "offset and length must be non-negative integers",
                    )),
                },
                _ => Spec::Bad(SetError::BadReference("a reference is [url] or [url, offset, length]")),
            }
        }
        other => Spec::Bad(SetError::NotAReference(other.kind())),
    }
}

/// The most dimensions one `gen` entry may have.
pub const MAX_GEN_DIMENSIONS: usize = 32;

/// A `gen` entry's `dimensions` object, of at most [`MAX_GEN_DIMENSIONS`].
fn dimensions_of(g: &Value) -> Result<&[(String, Value)], SetError> {
    let dims = g
        .get("dimensions")
        .and_then(Value::as_object)
        .ok_or(SetError::Without {
            what: "a `gen` entry",
            member: "dimensions",
        })?;
    if dims.len() > MAX_GEN_DIMENSIONS {
        return Err(SetError::TooManyDimensions(dims.len()));
    }
    Ok(dims)
}

/// A range dimension's `start` (default 0), `stop` and `step` (default 1,
/// never 0).
fn range_of(name: &str, d: &Value) -> Result<(i64, i64, i64), SetError> {
    let n = |k: &str, default: Option<i64>| match d.get(k) {
        None => default.ok_or_else(|| dimension(name, format!("no `{k}`"))),
        Some(Value::Int(i)) => Ok(*i),
        Some(Value::UInt(u)) => i64::try_from(*u).map_err(|_| dimension(name, k)),
        Some(_) => Err(dimension(name, format!("`{k}` is not an integer"))),
    };
    let (start, stop, step) = (n("start", Some(0))?, n("stop", None)?, n("step", Some(1))?);
    if step == 0 {
        return Err(dimension(name, "step 0"));
    }
    Ok((start, stop, step))
}

/// A `gen` entry's dimensions: each a list of values or a range.
fn dimensions(g: &Value) -> Result<Vec<(&str, Vec<Val>)>, SetError> {
    dimensions_of(g)?
        .iter()
        .map(|(name, d)| {
            let values = match d {
                Value::Array(items) => items
                    .iter()
                    .map(|v| match v {
                        Value::Str(s) => Ok(Val::Str(s.clone())),
                        Value::Int(i) => Ok(Val::Int(i128::from(*i))),
                        Value::UInt(u) => Ok(Val::Int(i128::from(*u))),
                        other => Err(dimension(name, format!("a {} value", other.kind()))),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Value::Object(_) => {
                    let (start, stop, step) = range_of(name, d)?;
                    let len = range_len(start, stop, step);
                    if len > MAX_REFERENCES {
                        return Err(dimension(name, format!("{len} values")));
                    }
                    (0..len as i128)
                        .map(|i| Val::Int(i128::from(start) + i * i128::from(step)))
                        .collect()
                }
                _ => return Err(SetError::NotADimension(name.clone())),
            };
            Ok((name.as_str(), values))
        })
        .collect()
}

/// Python's `len(range(start, stop, step))`.
fn range_len(start: i64, stop: i64, step: i64) -> u64 {
    let (start, stop, step) = (i128::from(start), i128::from(stop), i128::from(step));
    let n = if step > 0 {
        (stop - start + step - 1).div_euclid(step)
    } else {
        (start - stop - step - 1).div_euclid(-step)
    };
    n.max(0) as u64
}

/// How many keys a `gen` entry makes, without making them.
fn gen_count(g: &Value) -> Result<u64, SetError> {
    let mut n: u64 = 1;
    for (name, d) in dimensions_of(g)? {
        let len = match d {
            Value::Array(items) => items.len() as u64,
            Value::Object(_) => {
                let (start, stop, step) = range_of(name, d)?;
                range_len(start, stop, step)
            }
            _ => return Err(SetError::NotADimension(name.clone())),
        };
        n = n.saturating_mul(len);
    }
    Ok(n)
}

/// A `gen` entry's keys, over the product of its dimensions (the last
/// varying fastest, as `itertools.product` does).
fn expand(g: &Value, templates: &Scope, out: &mut Vec<(String, Spec)>) -> Result<(), SetError> {
    let text = |k: &str| {
        g.get(k)
            .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
    };
    let without = |member| SetError::Without {
        what: "a `gen` entry",
        member,
    };
    let key = text("key").ok_or_else(|| without("key"))?;
    let url = text("url").ok_or_else(|| without("url"))?;
    let (offset, length) = (text("offset"), text("length"));
    if offset.is_some() != length.is_some() {
        return Err(SetError::OffsetWithoutLength);
    }
    // Counted first: an entry with an empty dimension makes no key, and
    // its other dimensions' values are never made.
    if gen_count(g)? == 0 {
        return Ok(());
    }
    let dims = dimensions(g)?;
    let mut at = vec![0usize; dims.len()];
    let lens: Vec<usize> = dims.iter().map(|(_, values)| values.len()).collect();
    // One scope for every key: the dimensions' values replace their own.
    let mut scope: HashMap<&str, Val> = templates.clone();
    loop {
        for ((name, values), &i) in dims.iter().zip(&at) {
            scope.insert(name, values[i].clone());
        }
        match template::render(&key, &scope) {
            Err(e) => return Err(SetError::GenKey(e)),
            Ok(k) => {
                let number = |t: &Option<String>| -> Result<u64, SetError> {
                    let s = template::render(t.as_deref().unwrap_or_default(), &scope)?;
                    s.trim().parse::<u64>().map_err(|_| SetError::NotANumber(s))
                };
                let spec = match template::render(&url, &scope) {
                    Err(e) => Spec::Bad(e.into()),
                    Ok(u) if offset.is_none() => Spec::Url { url: u, span: None },
                    Ok(u) => match (number(&offset), number(&length)) {
                        (Ok(o), Ok(n)) => Spec::Url {
                            url: u,
                            span: Some((o, n)),
                        },
                        (Err(e), _) | (_, Err(e)) => Spec::Bad(e),
                    },
                };
                out.push((k, spec));
            }
        }
        // The next index, the last dimension fastest.
        if !crate::odometer::next(&mut at, &lens) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn parse(doc: &str) -> Result<Vec<(String, Spec)>, SetError> {
        entries(&json::parse(doc.as_bytes()).unwrap())
    }

    /// The spec's own `gen` example, with fsspec's reading of it.
    #[test]
    fn gen_entries_expand_over_their_dimensions() {
        let got = parse(
            r#"{"version": 1, "templates": {"u": "server.domain/path"},
                "refs": {"key0": "data"},
                "gen": [{"key": "gen_key{{i}}", "url": "http://{{u}}_{{i}}", "offset": "{{(i + 1) * 1000}}",
                         "length": "1000", "dimensions": {"i": {"stop": 5}}},
                        {"key": "g/{{a}}.{{b}}", "url": "f_{{a}}.nc", "dimensions": {"a": ["x", "y"], "b": {"start": 3, "stop": 0, "step": -2}}}]}"#,
        )
        .unwrap();
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "key0", "gen_key0", "gen_key1", "gen_key2", "gen_key3", "gen_key4", "g/x.3", "g/x.1", "g/y.3", "g/y.1"
            ]
        );
        assert_eq!(
            got[3].1,
            Spec::Url {
                url: "http://server.domain/path_2".into(),
                span: Some((3000, 1000))
            }
        );
        assert_eq!(
            got[9].1,
            Spec::Url {
                url: "f_y.nc".into(),
                span: None
            }
        );
    }

    #[test]
    fn bad_values_spoil_their_key_and_bad_structure_the_set() {
        let got = parse(
            r#"{"version": 1, "templates": {"u": "d.nc"},
                "refs": {"a": ["{{v}}", 0, 1], "b": ["base64:!!"], "c": ["d.nc", -1, 2], "d": 5,
                         "e": {"zarr_format": 2}, "f": ["{{ u }}"]}}"#,
        )
        .unwrap();
        let by: HashMap<_, _> = got.into_iter().collect();
        for k in ["a", "b", "c", "d"] {
            assert!(matches!(by[k], Spec::Bad(_)), "{k}: {:?}", by[k]);
        }
        assert_eq!(by["e"], Spec::Inline(br#"{"zarr_format":2}"#.to_vec()));
        assert_eq!(
            by["f"],
            Spec::Url {
                url: "d.nc".into(),
                span: None
            }
        );
        for doc in [
            r#"{"version": 2, "refs": {}}"#,
            r#"{"version": 1}"#,
            r#"{"version": 1, "refs": []}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k", "url": "u"}]}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k", "url": "u", "offset": "1", "dimensions": {"i": {"stop": 2}}}]}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k{{i}}", "url": "u", "dimensions": {"i": {"stop": 2000000}}}]}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k", "url": "u", "dimensions": {"i": {"stop": 2000, "step": 0}}}]}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k{{i}}{{j}}", "url": "u", "dimensions": {"i": {"stop": 2000}, "j": {"stop": 2000}}}]}"#,
        ] {
            assert!(parse(doc).is_err(), "{doc}");
        }
        // A JSON file that is no reference set: its values stay out of
        // the message.
        let e = parse(r#"{"version": "AKIAIOSFODNN7EXAMPLE", "secret": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("AKIA"), "{e}");
        assert!(e.contains("`version` is a string"), "{e}");
    }

    /// A `gen` entry with an empty dimension makes no key and builds none
    /// of its other dimensions' values; more than MAX_GEN_DIMENSIONS
    /// dimensions is an error before any is built.
    #[test]
    fn gen_entries_are_counted_before_they_are_built() {
        let ranges = |n: usize| {
            (0..n)
                .map(|i| format!(r#""d{i}": {{"stop": 1048576}}"#))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let doc = format!(
            r#"{{"version": 1, "refs": {{"a": "x"}}, "gen": [{{"key": "k", "url": "u",
                "dimensions": {{"e": [], {}}}}}]}}"#,
            ranges(MAX_GEN_DIMENSIONS - 1)
        );
        let got = parse(&doc).unwrap();
        assert_eq!(got.len(), 1);
        let doc = format!(
            r#"{{"version": 1, "refs": {{}}, "gen": [{{"key": "k", "url": "u",
                "dimensions": {{"e": [], {}}}}}]}}"#,
            ranges(MAX_GEN_DIMENSIONS + 8)
        );
        let e = parse(&doc).unwrap_err().to_string();
        assert!(e.contains("dimensions"), "{e}");
    }
}
