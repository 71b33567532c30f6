//! `zstd` (spec: zarr-v3/codecs/zstd.md): a Zstandard stream (RFC 8878), one
//! or more frames. Example: `{"name": "zstd", "configuration": {"level": 5,
//! "checksum": false}}`. The configuration only matters when encoding.
//!
//! Decoding streams into a buffer bounded by the caller's limit, so a frame
//! that claims a huge content size allocates nothing for it.

use super::{CodecError, read_bounded};

pub fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let decoder = ::zstd::stream::read::Decoder::with_buffer(input).map_err(|e| CodecError::Corrupt {
        codec: "zstd",
        reason: e.to_string(),
    })?;
    read_bounded(decoder, limit, "zstd")
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
    }
}
