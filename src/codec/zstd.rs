//! `zstd` (spec: zarr-v3/codecs/zstd.md): a Zstandard stream (RFC 8878), one
//! or more frames. Example: `{"name": "zstd", "configuration": {"level": 5,
//! "checksum": false}}`. The configuration only matters when encoding.
//!
//! Decoding is single-shot (`ZSTD_decompressDCtx`) straight into a buffer of
//! the caller's limit, with one decompression context per thread: no window
//! buffer, no copy, and a frame that claims more than the limit fails
//! without allocating anything for it.

use std::cell::RefCell;

use super::CodecError;

thread_local! {
    static CONTEXT: RefCell<Option<::zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decompress a zstd frame, refusing more than `limit` bytes of output.
pub fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |e: std::io::Error| CodecError::Corrupt {
        codec: "zstd",
        reason: e.to_string(),
    };
    CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(::zstd::bulk::Decompressor::new().map_err(corrupt)?);
        }
        let ctx = slot.as_mut().expect("just set");
        // One byte of room past the limit tells "too large" from "exact".
        let mut out = Vec::with_capacity(limit.saturating_add(1));
        match ctx.decompress_to_buffer(input, &mut out) {
            Ok(_) if out.len() > limit => Err(CodecError::TooLarge { codec: "zstd", limit }),
            Ok(_) => Ok(out),
            // The output outgrew the limit, or the input is corrupt: a
            // streaming decode bounded by the limit tells which.
            Err(e) => match bounded(input, limit) {
                Ok(true) => Err(CodecError::TooLarge { codec: "zstd", limit }),
                Ok(false) => Err(corrupt(e)),
                Err(e) => Err(corrupt(e)),
            },
        }
    })
}

/// Whether `input` decodes to more than `limit` bytes (decoding at most
/// `limit + 1` of them); an error where it is corrupt before that.
fn bounded(input: &[u8], limit: usize) -> std::io::Result<bool> {
    use std::io::Read;
    let mut decoder = ::zstd::stream::read::Decoder::with_buffer(input)?;
    let mut sink = [0u8; 64 << 10];
    let mut total = 0usize;
    loop {
        match decoder.read(&mut sink)? {
            0 => return Ok(false),
            n => total += n,
        }
        if total > limit {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_limits() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let enc = ::zstd::encode_all(&data[..], 3).unwrap();
        assert_eq!(decode(&enc, data.len()).unwrap(), data);
        assert!(matches!(decode(&enc, data.len() - 1), Err(CodecError::TooLarge { .. })));
        assert!(matches!(decode(b"garbage!", 100), Err(CodecError::Corrupt { .. })));
        assert!(decode(&enc[..enc.len() / 2], data.len()).is_err());
        // Two frames back to back decode as their concatenation.
        let two = [enc.clone(), enc].concat();
        assert_eq!(decode(&two, 2 * data.len()).unwrap(), [data.clone(), data].concat());
        // A frame written without its content size (streaming) decodes too.
        let mut e = ::zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        e.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut e, b"hello hello hello").unwrap();
        assert_eq!(decode(&e.finish().unwrap(), 100).unwrap(), b"hello hello hello");
    }
}
