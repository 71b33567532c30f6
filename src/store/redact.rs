//! Secrets in store locations stay out of sight: a URL's user info
//! (`user:password@`), query string (a pre-signed URL's signature) and
//! fragment are dropped wherever a location is shown, in `/proc/mounts`,
//! argv, logs and messages.
//!
//! Invariant: [`redact_text`] leaves no `scheme://user:password@` and no
//! `scheme://…?query` in what it returns, whatever else the text holds;
//! [`Redacting`] applies it to every write of a log, and writes each
//! event on one line: no control character a name brought (a file's, a
//! program's, a node's) reaches the log raw, so none forges a line or
//! moves a terminal's cursor.

use std::borrow::Cow;
use std::io::{self, Write};

/// A store location as it may be shown (`/proc/mounts`, messages, logs): a
/// URL loses its query string, fragment and user info, since a pre-signed
/// URL or `user:password@` holds a secret; a path is shown as it is.
pub fn redact_url(store: &str) -> String {
    let Some((scheme, rest)) = store.split_once("://") else {
        return store.to_string();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if path.is_empty() && !rest.contains('/') {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    }
}

/// `text` with every URL in it passed through [`redact_url`]: a URL runs
/// from its scheme to the first blank, quote or bracket.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find("://").map(|i| from + i) {
        let start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .map_or(0, |i| i + 1);
        let end = text[at..]
            .find(|c: char| c.is_whitespace() || "\"'`<>()[]{}".contains(c))
            .map_or(text.len(), |i| at + i);
        if start < at && start >= done {
            out.push_str(&text[done..start]);
            out.push_str(&redact_url(&text[start..end]));
            done = end;
        }
        from = end.max(at + 3);
        if from >= bytes.len() {
            break;
        }
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// A log writer that redacts each write ([`redact_text`]). tracing writes
/// an event in one call, so a URL is never split between two.
pub struct Redacting<W: Write>(pub W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(one_line(&redact_text(&text)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// One event's text on one line: every control character but the event's
/// closing newline escaped (`\n`, `\r`, `\t`, else `\u{..}`), except the
/// colour sequences (`ESC [ digits ; m`) that tracing writes on a terminal.
fn one_line(text: &str) -> Cow<'_, str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !body
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let chars = body.char_indices();
    for (at, c) in chars {
        match c {
            '\x1b' if is_colour(&body[at..]) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push('\t'),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    if body.len() < text.len() {
        out.push('\n');
    }
    Cow::Owned(out)
}

/// Whether `s` starts with a colour sequence, `ESC [ (digits|;)* m`.
fn is_colour(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("\x1b[") else {
        return false;
    };
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'));
    end.is_some_and(|i| rest[i..].starts_with('m'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_line_whatever_its_fields_hold() {
        assert_eq!(one_line("plain\n"), "plain\n");
        assert_eq!(one_line("a\nFORGED\x1b[2J\n"), "a\\nFORGED\\u{1b}[2J\n");
        assert_eq!(one_line("\x1b[32mINFO\x1b[0m x\r\n"), "\x1b[32mINFO\x1b[0m x\\r\n");
        let mut out = Vec::new();
        Redacting(&mut out).write_all(b"name=a\nb\n").unwrap();
        assert_eq!(out, b"name=a\\nb\n");
    }

    #[test]
    fn urls_lose_user_info_and_queries() {
        assert_eq!(
            redact_url("https://user:secret@example.org/data.zarr/?X-Amz-Signature=abc#frag"),
            "https://example.org/data.zarr/"
        );
        assert_eq!(redact_url("s3://bucket/x.zarr"), "s3://bucket/x.zarr");
        assert_eq!(redact_url("s3://bucket"), "s3://bucket");
        assert_eq!(redact_url("/data/a@b?.zarr"), "/data/a@b?.zarr");
    }

    #[test]
    fn every_url_in_a_text_is_redacted() {
        let t = "PROPFIND http://alice:pw1@host:8080/x.zarr/ failed; see 'https://u:pw2@h/p?sig=pw3' (s3://b/k)";
        let r = redact_text(t);
        for secret in ["pw1", "pw2", "pw3", "alice"] {
            assert!(!r.contains(secret), "{r}");
        }
        assert_eq!(
            r,
            "PROPFIND http://host:8080/x.zarr/ failed; see 'https://h/p' (s3://b/k)"
        );
        assert_eq!(redact_text("no url here"), "no url here");
        assert_eq!(redact_text("://x"), "://x");
        assert_eq!(redact_text("a://"), "a://");
        let mut w = Redacting(Vec::new());
        w.write_all(b"store=https://k:s@h/z?t=1 ok\n").unwrap();
        assert_eq!(w.0, b"store=https://h/z ok\n");
    }
}
