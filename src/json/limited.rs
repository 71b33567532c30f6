//! Parsing with limits: objects kept only in part (see [`Limits`]), what is
//! left out checked without being built.
//!
//! Invariant: nothing is allocated for a member that is left out, and a
//! document is accepted or refused exactly as [`super::parse`] would.

use super::{JsonError, MAX_DEPTH, Parser, Value, parse_with};

/// Which objects a parse keeps only in part, and how much of them.
///
/// In a limited object, a member (its key and value) that would take the
/// text of the members kept past `max` bytes, or their count past
/// `max_members`, is checked but not built: it is left out, and the object
/// gets one more member, `note_key`, whose text names what was left out and
/// how large it was. Nothing is allocated for what is left out; later
/// members that still fit are kept.
pub struct Limits {
    /// Whether the value of a member named so is a limited object.
    pub limited: fn(&str) -> bool,
    /// Whether the document itself is one.
    pub root: bool,
    /// The most bytes of text a limited object's members may keep.
    pub max: usize,
    /// The most members a limited object may keep.
    pub max_members: usize,
    /// The key of the member that says what was left out.
    pub note_key: &'static str,
}

/// [`super::parse`], keeping limited objects within `limits`; also the bytes of
/// text left out.
pub fn parse_limited(text: &[u8], limits: &Limits) -> Result<(Value, usize), JsonError> {
    parse_with(text, Some(limits))
}

/// What a limited object left out: the first few names, how many, how large.
#[derive(Default)]
struct LeftOut {
    names: Vec<String>,
    count: usize,
    bytes: usize,
}

impl LeftOut {
    const NAMED: usize = 8;

    fn note(&self, limits: &Limits) -> String {
        let mut text = self.names.join(", ");
        if self.count > self.names.len() {
            text.push_str(&format!(" and {} more", self.count - self.names.len()));
        }
        format!(
            "{text}: {} bytes of JSON left out (nzfs keeps {} bytes and {} members of one node's \
             attributes); the store's metadata document holds them",
            self.bytes, limits.max, limits.max_members
        )
    }
}

impl Parser<'_> {
    /// An object kept within the limits (see [`Limits`]).
    pub(super) fn limited_object(&mut self, depth: usize) -> Result<Value, JsonError> {
        let Some(limits) = self.limits else {
            return self.object(depth);
        };
        self.i += 1;
        let mut members = Vec::new();
        let mut kept = 0usize;
        let mut out = LeftOut::default();
        self.skip_ws();
        if !self.eat(b"}") {
            loop {
                self.skip_ws();
                if self.s.get(self.i) != Some(&b'"') {
                    return Err(self.err("expected a string key"));
                }
                let member = self.i;
                let key = self.string()?;
                self.skip_ws();
                if !self.eat(b":") {
                    return Err(self.err("expected ':'"));
                }
                self.skip_ws();
                let start = self.i;
                self.skip(depth + 1)?;
                let len = self.i - member;
                if kept + len <= limits.max && members.len() < limits.max_members {
                    kept += len;
                    self.i = start;
                    members.push((key, self.value(depth + 1)?));
                } else {
                    out.count += 1;
                    out.bytes += len;
                    if out.names.len() < LeftOut::NAMED {
                        out.names.push(key);
                    }
                }
                self.skip_ws();
                if self.eat(b",") {
                    continue;
                }
                if self.eat(b"}") {
                    break;
                }
                return Err(self.err("expected ',' or '}'"));
            }
        }
        if out.count > 0 {
            self.left_out += out.bytes;
            members.push((limits.note_key.to_string(), Value::Str(out.note(limits))));
        }
        Ok(Value::Object(members))
    }

    /// Check one value and move past it, building nothing.
    pub(super) fn skip(&mut self, depth: usize) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let close = match self.s.get(self.i) {
            Some(b'{') => b'}',
            Some(b'[') => b']',
            Some(b'"') => return self.skip_string(),
            // Numbers and literals allocate nothing.
            _ => return self.value(depth).map(drop),
        };
        self.i += 1;
        self.skip_ws();
        if self.eat(&[close]) {
            return Ok(());
        }
        loop {
            self.skip_ws();
            if close == b'}' {
                if self.s.get(self.i) != Some(&b'"') {
                    return Err(self.err("expected a string key"));
                }
                self.skip_string()?;
                self.skip_ws();
                if !self.eat(b":") {
                    return Err(self.err("expected ':'"));
                }
                self.skip_ws();
            }
            self.skip(depth + 1)?;
            self.skip_ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(&[close]) {
                return Ok(());
            }
            return Err(self.err(if close == b'}' {
                "expected ',' or '}'"
            } else {
                "expected ',' or ']'"
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    const LIMITS: Limits = Limits {
        limited: |k| k == "attributes",
        root: false,
        max: 30,
        max_members: 3,
        note_key: "_left_out",
    };

    #[test]
    fn limited_objects_keep_what_fits_and_say_what_they_left_out() {
        let text = br#"{"shape": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "attributes": {"units": "K", "big": [1, 2, 3, 4, 5, 6, 7, 8, 9], "long": "abcdefghijklmnopqrstuvwxyz", "c": 1, "d": "0123456789", "e": 2}, "g": {"attributes": {"x": "0123456789abcdefghijklmnopqrst"}}}"#;
        let (v, left_out) = parse_limited(text, &LIMITS).unwrap();
        // Unlimited members are whole, however long.
        assert_eq!(v.get("shape").unwrap().as_array().unwrap().len(), 10);
        let attrs = v.get("attributes").unwrap().as_object().unwrap();
        let keys: Vec<&str> = attrs.iter().map(|(k, _)| k.as_str()).collect();
        // Members count whole: `"units": "K"` 12 and `"c": 1` 6 bytes are
        // kept, `"d": "0123456789"` (17) would pass 30, `"e": 2` fits again.
        assert_eq!(keys, ["units", "c", "e", "_left_out"]);
        let note = attrs[3].1.as_str().unwrap();
        assert!(note.starts_with("big, long, d: 87 bytes of JSON left out"), "{note}");
        // Any member named so is limited, however deep.
        let inner = v.get("g").unwrap().get("attributes").unwrap().as_object().unwrap();
        assert_eq!(inner[0].0, "_left_out");
        assert_eq!(left_out, 34 + 36 + 17 + 37);
        // Within the limits, the same as an unlimited parse.
        let small = br#"{"attributes": {"a": [1], "b": {"c": 2}}}"#;
        assert_eq!(parse_limited(small, &LIMITS).unwrap(), (parse(small).unwrap(), 0));
        // What is left out is still checked.
        for bad in [
            &br#"{"attributes": {"big": [1, 2, 3, 4, 5, 6, 7, 8, 9,]}}"#[..],
            br#"{"attributes": {"big": "abcdefghijklmnopqrstuvwxyz\q"}}"#,
            br#"{"attributes": {"big": {"a" 1, "bbbbbbbbbbbbbbbbbbbbb": 2}}}"#,
        ] {
            assert!(parse_limited(bad, &LIMITS).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!(r#"{{"attributes": {{"a": {}}}}}"#, "[".repeat(10_000));
        assert_eq!(
            parse_limited(deep.as_bytes(), &LIMITS).unwrap_err().reason,
            "nesting too deep"
        );
        // A document that is itself limited (a .zattrs).
        let root = Limits { root: true, ..LIMITS };
        let (v, _) = parse_limited(br#"{"long": "abcdefghijklmnopqrstuvwxyz", "a": 1}"#, &root).unwrap();
        assert_eq!(v.as_object().unwrap()[0], ("a".to_string(), Value::Int(1)));
        // At most 3 members, however small.
        let (v, _) = parse_limited(br#"{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}"#, &root).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "_left_out"]);
        assert!(
            v.get("_left_out")
                .unwrap()
                .as_str()
                .unwrap()
                .starts_with("d, e: 12 bytes")
        );
    }
}
