//! `gzip` (spec: zarr-v3/codecs/gzip.rst): an RFC 1952 gzip stream.
//! Example: `{"name": "gzip", "configuration": {"level": 5}}`.
//! Decoding is bounded by the caller's limit.

use super::{CodecError, read_bounded};

/// Decompress a gzip stream, refusing more than `limit` bytes of output.
pub fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    read_bounded(flate2::read::MultiGzDecoder::new(input), limit, "gzip")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn round_trip_and_limits() {
        let data = vec![7u8; 100_000];
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(5));
        enc.write_all(&data).unwrap();
        let enc = enc.finish().unwrap();
        assert_eq!(decode(&enc, data.len()).unwrap(), data);
        assert!(matches!(decode(&enc, 1000), Err(CodecError::TooLarge { .. })));
        assert!(decode(b"\x1f\x8bnot gzip", 100).is_err());
        assert!(decode(&enc[..enc.len() - 9], data.len()).is_err());
    }
}
