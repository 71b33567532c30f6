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

use super::CodecError;
use crate::zarr::text::push_line;

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
