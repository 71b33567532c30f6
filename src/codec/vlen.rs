//! `vlen-utf8` and `vlen-bytes` (zarr-extensions codecs; numcodecs'
//! `VLenUTF8`/`VLenBytes`, also the Zarr v2 object codecs): the array ->
//! bytes codec of the variable-length types. Layout: a little-endian u32
//! item count, then per item a little-endian u32 length and its bytes.
//!
//! Decoding produces the text form of [`crate::zarr::text`] (one escaped
//! line per element), which is what nzfs shows of such arrays.
//!
//! Invariants: the count must equal the chunk's element count; every length
//! is checked against the bytes left, so output never exceeds four times
//! the input plus one byte per element.

use super::{CodecError, EncodeError};
use crate::zarr::text::{parse_line, push_line};

/// Decode one chunk of `elements` values into text lines.
pub fn decode(input: &[u8], elements: usize, codec: &'static str) -> Result<Vec<u8>, CodecError> {
    let corrupt = |reason: String| CodecError::Corrupt { codec, reason };
    let Some((head, mut rest)) = input.split_first_chunk::<4>() else {
        return Err(CodecError::Truncated {
            codec,
            len: input.len(),
        });
    };
    let n = u32::from_le_bytes(*head) as usize;
    if n != elements {
        return Err(corrupt(format!("{n} items, expected {elements}")));
    }
    let mut out = Vec::with_capacity(rest.len() + n);
    for i in 0..n {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(corrupt(format!("item {i}: no length")));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > tail.len() {
            return Err(corrupt(format!("item {i}: {len} bytes, {} left", tail.len())));
        }
        push_line(&mut out, &tail[..len]);
        rest = &tail[len..];
    }
    if !rest.is_empty() {
        return Err(corrupt(format!("{} bytes after the last item", rest.len())));
    }
    Ok(out)
}

/// Encode `elements` values given as text lines (as [`decode`] gives
/// them): the inverse of [`decode`].
pub fn encode(text: &[u8], elements: usize, codec: &'static str) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::with_capacity(4 + text.len() + 4 * elements);
    out.extend_from_slice(&(elements as u32).to_le_bytes());
    let mut n = 0usize;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let Some(line) = line.strip_suffix(b"\n") else {
            return Err(EncodeError::Failed {
                codec,
                reason: "the last value has no newline".into(),
            });
        };
        let value = parse_line(line).ok_or_else(|| EncodeError::Failed {
            codec,
            reason: format!("value {n}: a `\\` escape that is not \\\\, \\n, \\r or \\xNN"),
        })?;
        let len = u32::try_from(value.len()).map_err(|_| EncodeError::Failed {
            codec,
            reason: format!("value {n}: over 4 GiB"),
        })?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&value);
        n += 1;
    }
    if n != elements {
        return Err(EncodeError::Failed {
            codec,
            reason: format!("{n} values for a chunk of {elements}"),
        });
    }
    Ok(out)
}

/// The lines of `text` (one per value, as [`decode`] gives them) in the
/// order `from` says: line `k` of the result is line `from[k]`. A line
/// missing from `text` (never, for a decode's output) is left out.
pub fn permute_lines(text: &[u8], from: &[usize]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let mut out = Vec::with_capacity(text.len());
    for &i in from {
        if let Some(line) = lines.get(i) {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(items: &[&[u8]]) -> Vec<u8> {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for i in items {
            out.extend((i.len() as u32).to_le_bytes());
            out.extend(*i);
        }
        out
    }

    #[test]
    fn encoding_undoes_decoding() {
        let items: [&[u8]; 5] = [b"ab", b"c\nd\\e\r", b"", "\u{e9}t\u{e9}".as_bytes(), &[0xff, b'x']];
        let enc = encode(&items);
        let text = decode(&enc, 5, "vlen-utf8").unwrap();
        assert_eq!(super::encode(&text, 5, "vlen-utf8").unwrap(), enc);
        assert!(super::encode(&text, 4, "vlen-utf8").is_err());
        assert!(
            super::encode(b"a\\q\n", 1, "vlen-utf8").is_err(),
            "not an escape push_line writes"
        );
        assert!(super::encode(b"a", 1, "vlen-utf8").is_err(), "no newline");
    }

    #[test]
    fn lines_and_errors() {
        let enc = encode(&[b"ab", b"c\nd", b""]);
        assert_eq!(decode(&enc, 3, "vlen-utf8").unwrap(), b"ab\nc\\nd\n\n");
        assert!(decode(&enc, 2, "vlen-utf8").is_err());
        assert!(decode(&enc[..enc.len() - 1], 3, "vlen-utf8").is_err());
        let mut long = encode(&[b"ab"]);
        long[4] = 200;
        assert!(decode(&long, 1, "vlen-bytes").is_err());
        assert!(decode(&[1, 0], 1, "vlen-bytes").is_err());
    }
}
