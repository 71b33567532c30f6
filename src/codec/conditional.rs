//! `conditional` (zarr-extensions `codecs/conditional`): a `bytes -> bytes`
//! codec that wraps a list of `bytes -> bytes` codecs, each applied to a
//! chunk or not as a bit mask at the chunk's start says.
//!
//! A chunk is `header_bits / 8` bytes of mask, then the data: bit `i`
//! (little-endian bit order, byte 0 first) set means codec `i` was applied
//! when writing, so decoding undoes the set ones from the last to the
//! first. Invariants: a set reserved bit (past the last codec) is corrupt
//! data, not ignored; every nested decode is bounded by the chain's limit.

use super::{BytesToBytes, CodecError};
use crate::json::Value;
use crate::zarr::metadata::{CodecSpec, MetadataError};

/// The most codecs one `conditional` may wrap.
const MAX_CODECS: usize = 64;

/// `conditional`: its codecs and the size of each chunk's mask.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditional {
    codecs: Vec<BytesToBytes>,
    header_bytes: usize,
}

fn bad(reason: String) -> MetadataError {
    MetadataError::BadCodec {
        codec: "conditional".into(),
        reason,
    }
}

impl Conditional {
    /// Read its configuration; `build` makes each wrapped codec (and
    /// refuses one that is not `bytes -> bytes`).
    pub fn from_configuration(
        config: Option<&Value>,
        build: impl Fn(&CodecSpec) -> Result<BytesToBytes, MetadataError>,
    ) -> Result<Self, MetadataError> {
        if let Some(k) = super::unknown_member(config, &["codecs", "header_bits"]) {
            return Err(bad(format!("unknown configuration member `{k}`")));
        }
        let items = config
            .and_then(|c| c.get("codecs"))
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`codecs` is required: a list of bytes -> bytes codecs".into()))?;
        if items.len() > MAX_CODECS {
            return Err(bad(format!("{} codecs (at most {MAX_CODECS})", items.len())));
        }
        let specs = crate::zarr::metadata::codec_specs(items)?;
        let codecs = specs.iter().map(build).collect::<Result<Vec<_>, _>>()?;
        let default_bits = codecs.len().div_ceil(8) * 8;
        let header_bits = match config.and_then(|c| c.get("header_bits")) {
            None | Some(Value::Null) => default_bits,
            Some(v) => v
                .as_u64()
                .and_then(|b| usize::try_from(b).ok())
                .filter(|&b| b % 8 == 0 && b >= codecs.len() && b <= 8 * MAX_CODECS)
                .ok_or_else(|| {
                    bad(format!(
                        "`header_bits` {v} is not a multiple of 8 of at least {} (the codecs) and at most {}",
                        codecs.len(),
                        8 * MAX_CODECS
                    ))
                })?,
        };
        Ok(Conditional {
            codecs,
            header_bytes: header_bits / 8,
        })
    }

    /// Undo the codecs chunk `input`'s mask says were applied.
    pub fn decode(&self, mut input: Vec<u8>, limit: usize) -> Result<Vec<u8>, CodecError> {
        if input.len() < self.header_bytes {
            return Err(CodecError::Corrupt {
                codec: "conditional",
                reason: format!(
                    "{} bytes, shorter than its {}-byte mask",
                    input.len(),
                    self.header_bytes
                ),
            });
        }
        let mask: Vec<u8> = input.drain(..self.header_bytes).collect();
        let applied = |i: usize| mask[i / 8] >> (i % 8) & 1 == 1;
        if let Some(bit) = (self.codecs.len()..8 * self.header_bytes).find(|&i| applied(i)) {
            return Err(CodecError::Corrupt {
                codec: "conditional",
                reason: format!("reserved mask bit {bit} is set (only {} codecs)", self.codecs.len()),
            });
        }
        let mut bytes = input;
        for (i, codec) in self.codecs.iter().enumerate().rev() {
            if applied(i) {
                bytes = codec.decode(bytes, None, limit)?;
            }
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(cfg: &str) -> Result<Conditional, MetadataError> {
        Conditional::from_configuration(Some(&parse(cfg.as_bytes()).unwrap()), |s| match s.name.as_str() {
            "crc32c" => Ok(BytesToBytes::Crc32c),
            "zstd" => Ok(BytesToBytes::Zstd(crate::codec::zstd::Zstd::from_configuration(None))),
            other => Err(bad(format!("{other} here"))),
        })
    }

    /// Masks made by hand from the registry's layout.
    #[test]
    fn each_chunk_undoes_what_its_mask_names() {
        let c = codec(r#"{"codecs": [{"name": "zstd"}, {"name": "crc32c"}]}"#).unwrap();
        let data = b"conditional codec data".to_vec();
        // Mask 0: stored as is.
        let mut raw = vec![0u8];
        raw.extend(&data);
        assert_eq!(c.decode(raw, 1 << 20).unwrap(), data);
        // Mask 0b01: zstd only.
        let mut z = vec![0b01u8];
        z.extend(zstd::bulk::compress(&data, 3).unwrap());
        assert_eq!(c.decode(z, 1 << 20).unwrap(), data);
        // Mask 0b11: zstd, then crc32c over the compressed bytes.
        let packed = zstd::bulk::compress(&data, 3).unwrap();
        let mut both = vec![0b11u8];
        both.extend(&packed);
        both.extend(crc32c::crc32c(&packed).to_le_bytes());
        assert_eq!(c.decode(both.clone(), 1 << 20).unwrap(), data);
        // A flipped byte fails the checksum; a reserved bit is corrupt.
        let last = both.len() - 1;
        both[last] ^= 1;
        assert!(c.decode(both, 1 << 20).is_err());
        assert!(c.decode(vec![0b100], 1 << 20).is_err());
        assert!(c.decode(Vec::new(), 1 << 20).is_err());
        // Reserved header bytes for codecs added later.
        let wide = codec(r#"{"codecs": [{"name": "zstd"}], "header_bits": 16}"#).unwrap();
        let mut two = vec![0u8, 0];
        two.extend(&data);
        assert_eq!(wide.decode(two, 1 << 20).unwrap(), data);
        assert!(wide.decode(vec![0, 0x80], 1 << 20).is_err());
    }

    #[test]
    fn its_configuration_is_checked() {
        assert!(codec(r#"{"codecs": [{"name": "zstd"}], "header_bits": 4}"#).is_err());
        assert!(codec(r#"{"codecs": [{"name": "zstd"}], "header_bits": 0}"#).is_err());
        assert!(codec(r#"{"codecs": [{"name": "bytes"}]}"#).is_err());
        assert!(codec(r#"{"header_bits": 8}"#).is_err());
        assert!(codec(r#"{"codecs": [], "mask": 1}"#).is_err());
        assert_eq!(codec(r#"{"codecs": []}"#).unwrap().header_bytes, 0);
    }
}
