//! `gzip` (spec: zarr-v3/codecs/gzip.rst): an RFC 1952 gzip stream.
//! Example: `{"name": "gzip", "configuration": {"level": 5}}`.
//! Decoding is bounded by the caller's limit; encoding writes one member
//! at the configured level ([`Gzip::encode`]).

use std::io::Write;

use super::{CodecError, EncodeError, read_bounded};
use crate::json::Value;

/// `gzip`'s configuration, as encoding uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gzip {
    /// The compression level, 0 to 9.
    pub level: u32,
}

impl Gzip {
    /// Read its configuration; decoding needs none of it, so a level that
    /// is missing or not an integer is 6 (zlib's default), and one out of
    /// range is brought into 0 to 9.
    pub fn from_configuration(config: Option<&Value>) -> Gzip {
        let level = match config.and_then(|c| c.get("level")) {
            Some(Value::Int(i)) => (*i).clamp(0, 9) as u32,
            Some(Value::UInt(u)) => (*u).min(9) as u32,
            _ => 6,
        };
        Gzip { level }
    }

    /// Compress `input` into one gzip member.
    pub fn encode(&self, input: &[u8]) -> Result<Vec<u8>, EncodeError> {
        let failed = |e: std::io::Error| EncodeError::Failed {
            codec: "gzip",
            reason: e.to_string(),
        };
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(self.level));
        e.write_all(input).map_err(failed)?;
        e.finish().map_err(failed)
    }
}

/// Decompress a gzip stream, refusing more than `limit` bytes of output.
pub fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    read_bounded(flate2::read::MultiGzDecoder::new(input), limit, "gzip")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    proptest::proptest! {
        /// What `encode` writes, at any level, decodes to what it was given.
        #[test]
        fn decode_undoes_encode(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096), level in 0u32..=9) {
            let enc = Gzip { level }.encode(&data).unwrap();
            proptest::prop_assert_eq!(decode(&enc, data.len()).unwrap(), data);
        }
    }
}
