//! `bytes` (spec: zarr-v3/codecs/bytes.rst): the array -> bytes codec that
//! lays elements out in C order with a given byte order.
//! Example: `{"name": "bytes", "configuration": {"endian": "little"}}`;
//! `endian` may be omitted for 1-byte types.
//!
//! Decoding yields native byte order: each element (each half of a complex
//! number) is swapped when the stored order is not the host's. A record
//! (`struct`) is converted field by field; with no `endian` its fields are
//! little-endian, as the legacy `structured` type says. Encoding swaps
//! native elements into the stored order; records are not encoded.

use super::{CodecError, EncodeError};
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::MetadataError;

/// A byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// This machine's.
    pub const NATIVE: Endian = if cfg!(target_endian = "little") {
        Endian::Little
    } else {
        Endian::Big
    };
}

/// `bytes`: the elements as they are, in a stated endianness.
#[derive(Debug, Clone, PartialEq)]
pub struct BytesCodec {
    /// `None` when the configuration omits it (allowed for 1-byte types).
    pub endian: Option<Endian>,
}

impl BytesCodec {
    /// Read its configuration for an array of `data_type`.
    pub fn from_configuration(config: Option<&Value>, data_type: &DataType) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: "bytes".into(),
            reason,
        };
        let endian = match config.and_then(|c| c.get("endian")) {
            None | Some(Value::Null) => None,
            Some(Value::Str(s)) if s == "little" => Some(Endian::Little),
            Some(Value::Str(s)) if s == "big" => Some(Endian::Big),
            Some(other) => return Err(bad(format!("unknown endian {other}"))),
        };
        let record = matches!(data_type, DataType::Struct(_));
        if endian.is_none() && data_type.swap_unit() > 1 && !record {
            return Err(bad(format!("`endian` is required for {}", data_type.name())));
        }
        Ok(BytesCodec { endian })
    }

    /// Swap each element of `data_type` in `input` between native and the
    /// stored order, where they differ (the same swap either way).
    fn swap(&self, input: &mut [u8], data_type: &DataType) {
        let unit = data_type.swap_unit();
        if unit > 1 && self.endian.is_some_and(|e| e != Endian::NATIVE) {
            for item in input.chunks_exact_mut(unit) {
                item.reverse();
            }
        }
    }

    /// Encode `elements` elements of `data_type`, in native byte order,
    /// into the stored order: the inverse of [`BytesCodec::decode`].
    pub fn encode(&self, mut input: Vec<u8>, data_type: &DataType, elements: usize) -> Result<Vec<u8>, EncodeError> {
        let expected = elements * data_type.size();
        if input.len() != expected {
            return Err(EncodeError::SizeMismatch {
                codec: "bytes",
                expected,
                got: input.len(),
            });
        }
        if let DataType::Struct(r) = data_type {
            // Each leaf to its stored order: the swap decoding undoes.
            r.to_native(&mut input, self.endian == Some(Endian::Big));
            return Ok(input);
        }
        self.swap(&mut input, data_type);
        Ok(input)
    }

    /// Decode `elements` elements of `data_type` into native byte order.
    pub fn decode(&self, mut input: Vec<u8>, data_type: &DataType, elements: usize) -> Result<Vec<u8>, CodecError> {
        let expected = elements * data_type.size();
        if input.len() != expected {
            return Err(CodecError::SizeMismatch {
                codec: "bytes",
                expected,
                got: input.len(),
            });
        }
        if let DataType::Struct(r) = data_type {
            r.to_native(&mut input, self.endian == Some(Endian::Big));
            return Ok(input);
        }
        self.swap(&mut input, data_type);
        Ok(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn big_endian_and_complex() {
        let cfg = parse(br#"{"endian": "big"}"#).unwrap();
        let c = BytesCodec::from_configuration(Some(&cfg), &DataType::Int32).unwrap();
        let out = c
            .decode(vec![0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe], &DataType::Int32, 2)
            .unwrap();
        assert_eq!(out, [0x0102i32.to_ne_bytes(), (-2i32).to_ne_bytes()].concat());
        let mut enc = 1.5f32.to_be_bytes().to_vec();
        enc.extend((-2.0f32).to_be_bytes());
        let out = c.decode(enc, &DataType::Complex64, 1).unwrap();
        assert_eq!(out, [1.5f32.to_ne_bytes(), (-2.0f32).to_ne_bytes()].concat());
        assert!(c.decode(vec![0; 7], &DataType::Int32, 2).is_err());
    }

    #[test]
    fn endian_rules() {
        assert!(BytesCodec::from_configuration(None, &DataType::UInt8).is_ok());
        assert!(BytesCodec::from_configuration(None, &DataType::Raw(3)).is_ok());
        assert!(BytesCodec::from_configuration(None, &DataType::Int16).is_err());
        let odd = parse(br#"{"endian": "middle"}"#).unwrap();
        assert!(BytesCodec::from_configuration(Some(&odd), &DataType::UInt8).is_err());
    }

    proptest::proptest! {
        /// `decode` undoes `encode` in either byte order, for elements of
        /// 1 to 16 bytes (complex numbers swapped by halves).
        #[test]
        fn decode_undoes_encode(n in 0usize..64, big in proptest::prelude::any::<bool>(), t in 0usize..6) {
            let dt = [DataType::UInt8, DataType::Int16, DataType::Float32, DataType::Float64, DataType::Complex64, DataType::Complex128][t].clone();
            let c = BytesCodec { endian: Some(if big { Endian::Big } else { Endian::Little }) };
            let data: Vec<u8> = (0..n * dt.size()).map(|i| (i * 7 % 256) as u8).collect();
            let enc = c.encode(data.clone(), &dt, n).unwrap();
            proptest::prop_assert_eq!(c.decode(enc, &dt, n).unwrap(), data);
        }
    }
}
