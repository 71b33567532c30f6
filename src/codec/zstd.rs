//! `zstd` (spec: zarr-v3/codecs/zstd.md): a Zstandard stream (RFC 8878), one
//! or more frames. Example: `{"name": "zstd", "configuration": {"level": 5,
//! "checksum": false}}`. The configuration only matters when encoding
//! ([`Zstd::encode`]); decoding reads what the frames say.
//!
//! Decoding is single-shot (`ZSTD_decompressDCtx`) straight into a buffer of
//! the caller's limit, with one decompression context per thread: no window
//! buffer, no copy, and a frame that claims more than the limit fails
//! without allocating anything for it.

use std::cell::RefCell;

use super::{CodecError, EncodeError};
use crate::json::Value;

/// `zstd`'s configuration, as encoding uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zstd {
    /// The compression level (zstd's range, -131072 to 22; 0 is zstd's
    /// default).
    pub level: i32,
    /// Whether each frame carries a checksum of its content.
    pub checksum: bool,
}

impl Zstd {
    /// Read its configuration. Decoding needs none of it, so a member that
    /// is missing or of another type takes its default (level 0, no
    /// checksum) rather than refusing the array.
    pub fn from_configuration(config: Option<&Value>) -> Zstd {
        let level = match config.and_then(|c| c.get("level")) {
            Some(Value::Int(i)) => (*i).clamp(-131_072, 22) as i32,
            Some(Value::UInt(u)) => (*u).min(22) as i32,
            _ => 0,
        };
        let checksum = matches!(config.and_then(|c| c.get("checksum")), Some(Value::Bool(true)));
        Zstd { level, checksum }
    }

    /// Compress `input` into one frame, at this level and with a checksum
    /// where configured.
    pub fn encode(&self, input: &[u8]) -> Result<Vec<u8>, EncodeError> {
        let failed = |e: std::io::Error| EncodeError::Failed {
            codec: "zstd",
            reason: e.to_string(),
        };
        let mut c = ::zstd::bulk::Compressor::new(self.level).map_err(failed)?;
        c.include_checksum(self.checksum).map_err(failed)?;
        c.compress(input).map_err(failed)
    }
}

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

    proptest::proptest! {
        /// What `encode` writes, at any level and with or without a
        /// checksum, decodes to what it was given.
        #[test]
        fn decode_undoes_encode(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096), level in -5i32..8, checksum in proptest::prelude::any::<bool>()) {
            let z = Zstd { level, checksum };
            let enc = z.encode(&data).unwrap();
            proptest::prop_assert_eq!(decode(&enc, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn the_configuration_is_read_with_defaults() {
        let cfg = crate::json::parse(br#"{"level": 5, "checksum": true}"#).unwrap();
        assert_eq!(
            Zstd::from_configuration(Some(&cfg)),
            Zstd {
                level: 5,
                checksum: true
            }
        );
        assert_eq!(
            Zstd::from_configuration(None),
            Zstd {
                level: 0,
                checksum: false
            }
        );
        // A checksummed frame ends with 4 bytes more than one without.
        let data = vec![3u8; 1000];
        let with = Zstd {
            level: 3,
            checksum: true,
        }
        .encode(&data)
        .unwrap();
        let without = Zstd {
            level: 3,
            checksum: false,
        }
        .encode(&data)
        .unwrap();
        assert_eq!(with.len(), without.len() + 4);
    }
}
