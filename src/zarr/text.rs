//! The text form of string-valued arrays: what `data.txt` and the `.txt`
//! chunk files hold. One element per line, in C order, UTF-8; inside a
//! value `\` is written `\\`, a newline `\n`, a carriage return `\r`, and a
//! byte that is not part of valid UTF-8 `\xNN`. So line *i* is always
//! element *i*, whatever the values hold.
//!
//! Fixed-length types (`S n`, `U n`) lose their trailing NULs; a code unit
//! of `U n` that is not a Unicode scalar value becomes U+FFFD.
//!
//! A leaf module (it imports nothing): data types use it for fill values.

/// Append `value` and a newline to `out`, escaped.
pub fn push_line(out: &mut Vec<u8>, value: &[u8]) {
    for chunk in value.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b => out.push(b),
            }
        }
        for &b in chunk.invalid() {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out.push(b'\n');
}

/// The value of one line (its newline taken off) that [`push_line`]
/// wrote: its escapes undone; `None` where an escape is not one it writes.
pub fn parse_line(line: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(line.len());
    let mut bytes = line.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next()? {
            b'\\' => out.push(b'\\'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'x' => {
                let hex = [bytes.next()?, bytes.next()?];
                out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Append the line of one fixed-length element: UTF-32 code units in
/// native byte order when `utf32`, else NUL-padded bytes.
pub fn push_fixed(out: &mut Vec<u8>, utf32: bool, element: &[u8]) {
    match utf32 {
        true => {
            let s: String = element
                .chunks_exact(4)
                .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]]))
                .map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            push_line(out, s.trim_end_matches('\0').as_bytes());
        }
        false => {
            let end = element.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            push_line(out, &element[..end]);
        }
    }
}

/// The text of a whole buffer of `size`-byte fixed-length elements.
pub fn fixed_lines(buffer: &[u8], size: usize, utf32: bool) -> Vec<u8> {
    let size = size.max(1);
    let mut out = Vec::with_capacity(buffer.len() + buffer.len() / size);
    for element in buffer.chunks_exact(size) {
        push_fixed(&mut out, utf32, element);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_keep_one_line_per_element() {
        let mut out = Vec::new();
        push_line(&mut out, "a\\b\nc\r\u{e9}".as_bytes());
        push_line(&mut out, b"\xff\x00ok");
        push_line(&mut out, b"");
        assert_eq!(out, b"a\\\\b\\nc\\r\xc3\xa9\n\\xff\x00ok\n\n");
        let utf32: Vec<u8> = ['h', 'i', '\0']
            .iter()
            .flat_map(|&c| (c as u32).to_ne_bytes())
            .collect();
        assert_eq!(fixed_lines(&utf32, 12, true), b"hi\n");
        assert_eq!(fixed_lines(b"ab\0x\0\0", 3, false), b"ab\nx\n");
    }
}
