//! `scale_offset` (zarr-extensions/codecs/scale_offset): an
//! array -> array codec that stored `(x - offset) * scale`. Example:
//! `{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}`.
//!
//! Decoding is `x / scale + offset` in the array's own data type, as
//! zarr-python 3.4 computes it: floats in their width (`float32` in single
//! precision), integers exactly (a division that leaves a remainder, or a
//! result out of the type's range, is an error, as the spec says). `offset`
//! and `scale` are fill-value-encoded scalars of the array's type; absent,
//! they are 0 and 1.
//!
//! Invariant: the output has the input's size and type.

use super::CodecError;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::MetadataError;

/// `offset` and `scale` in the array's type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScaleOffset {
    /// For a float32 array.
    F32 {
        /// Subtracted when encoding.
        offset: f32,
        /// Multiplied by when encoding.
        scale: f32,
    },
    /// For a float64 array.
    F64 {
        /// Subtracted when encoding.
        offset: f64,
        /// Multiplied by when encoding.
        scale: f64,
    },
    /// Integers of `size` bytes, `signed` or not (computed in i128).
    Int {
        /// Subtracted when encoding.
        offset: i128,
        /// Multiplied by when encoding.
        scale: i128,
        /// The bytes of one element.
        size: usize,
        /// Whether the type is signed.
        signed: bool,
    },
}

fn bad(reason: String) -> MetadataError {
    MetadataError::BadCodec {
        codec: "scale_offset".into(),
        reason,
    }
}

impl ScaleOffset {
    /// Read its configuration for an array of type `dt`.
    pub fn from_configuration(config: Option<&Value>, dt: &DataType) -> Result<Self, MetadataError> {
        if let Some(k) = super::unknown_member(config, &["offset", "scale"]) {
            return Err(bad(format!("unknown configuration member `{k}`")));
        }
        let get = |name: &str| config.and_then(|c| c.get(name));
        // A scalar as the fill value of `dt`, in native bytes.
        let scalar = |name: &str, default: i64| -> Result<Vec<u8>, MetadataError> {
            match get(name) {
                Some(v) => dt.fill_value(v).map(|f| f.0).map_err(|e| bad(format!("{name}: {e}"))),
                None => dt
                    .fill_value(&Value::Int(default))
                    .map(|f| f.0)
                    .map_err(|e| bad(e.to_string())),
            }
        };
        let (offset, scale) = (scalar("offset", 0)?, scalar("scale", 1)?);
        let int = |b: &[u8], signed: bool| -> i128 {
            let mut wide = [0u8; 16];
            if cfg!(target_endian = "little") {
                wide[..b.len()].copy_from_slice(b);
                if signed && b.last().is_some_and(|&x| x & 0x80 != 0) {
                    wide[b.len()..].fill(0xFF);
                }
                i128::from_le_bytes(wide)
            } else {
                let mut le = b.to_vec();
                le.reverse();
                wide[..le.len()].copy_from_slice(&le);
                if signed && le.last().is_some_and(|&x| x & 0x80 != 0) {
                    wide[le.len()..].fill(0xFF);
                }
                i128::from_le_bytes(wide)
            }
        };
        let codec = match dt {
            DataType::Float32 => ScaleOffset::F32 {
                offset: f32::from_ne_bytes(offset[..4].try_into().expect("4 bytes")),
                scale: f32::from_ne_bytes(scale[..4].try_into().expect("4 bytes")),
            },
            DataType::Float64 => ScaleOffset::F64 {
                offset: f64::from_ne_bytes(offset[..8].try_into().expect("8 bytes")),
                scale: f64::from_ne_bytes(scale[..8].try_into().expect("8 bytes")),
            },
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => ScaleOffset::Int {
                offset: int(&offset, true),
                scale: int(&scale, true),
                size: dt.size(),
                signed: true,
            },
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => ScaleOffset::Int {
                offset: int(&offset, false),
                scale: int(&scale, false),
                size: dt.size(),
                signed: false,
            },
            other => return Err(bad(format!("not defined for {}", other.name()))),
        };
        if let ScaleOffset::Int { scale: 0, .. } = codec {
            return Err(bad("scale 0 cannot be inverted".into()));
        }
        Ok(codec)
    }

    /// Decode native-endian elements in place.
    pub fn decode(&self, mut data: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let corrupt = |reason: String| CodecError::Corrupt {
            codec: "scale_offset",
            reason,
        };
        match *self {
            ScaleOffset::F32 { offset, scale } => {
                for c in data.chunks_exact_mut(4) {
                    let x = f32::from_ne_bytes(c.try_into().expect("4 bytes"));
                    c.copy_from_slice(&(x / scale + offset).to_ne_bytes());
                }
            }
            ScaleOffset::F64 { offset, scale } => {
                for c in data.chunks_exact_mut(8) {
                    let x = f64::from_ne_bytes(c.try_into().expect("8 bytes"));
                    c.copy_from_slice(&(x / scale + offset).to_ne_bytes());
                }
            }
            ScaleOffset::Int {
                offset,
                scale,
                size,
                signed,
            } => {
                let bits = 8 * size as u32;
                let (lo, hi) = match signed {
                    true => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
                    false => (0, (1i128 << bits) - 1),
                };
                for c in data.chunks_exact_mut(size) {
                    let mut le = [0u8; 16];
                    let mut b = c.to_vec();
                    if cfg!(target_endian = "big") {
                        b.reverse();
                    }
                    le[..size].copy_from_slice(&b);
                    if signed && b[size - 1] & 0x80 != 0 {
                        le[size..].fill(0xFF);
                    }
                    let x = i128::from_le_bytes(le);
                    if x % scale != 0 {
                        return Err(corrupt(format!("{x} is not a multiple of scale {scale}")));
                    }
                    let y = x / scale + offset;
                    if y < lo || y > hi {
                        return Err(corrupt(format!("{y} is out of the data type's range")));
                    }
                    let mut out = y.to_le_bytes()[..size].to_vec();
                    if cfg!(target_endian = "big") {
                        out.reverse();
                    }
                    c.copy_from_slice(&out);
                }
            }
        }
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(config: &str, dt: &DataType) -> Result<ScaleOffset, MetadataError> {
        ScaleOffset::from_configuration(Some(&parse(config.as_bytes()).unwrap()), dt)
    }

    #[test]
    fn decodes_in_the_arrays_own_type() {
        // The spec's example: offset 5, scale 0.1, in float32 arithmetic.
        let c = codec(r#"{"offset": 5, "scale": 0.1}"#, &DataType::Float32).unwrap();
        let stored: Vec<u8> = [0.0f32, 10.0, -5.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let got: Vec<f32> = c
            .decode(stored)
            .unwrap()
            .chunks(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(
            got,
            [0.0f32 / 0.1f32 + 5.0, 10.0f32 / 0.1f32 + 5.0, -5.0f32 / 0.1f32 + 5.0]
        );
        // uint16 shifted by 1000 (the spec's range reduction).
        let c = codec(r#"{"offset": 1000}"#, &DataType::UInt16).unwrap();
        let stored: Vec<u8> = [0u16, 255].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(
            c.decode(stored).unwrap(),
            [1000u16, 1255]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<u8>>()
        );
        // int16 with scale 2: exact, else an error; out of range, an error.
        let c = codec(r#"{"offset": -3, "scale": 2}"#, &DataType::Int16).unwrap();
        let ok: Vec<u8> = [4i16, -8].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(
            c.decode(ok).unwrap(),
            [-1i16, -7].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>()
        );
        assert!(c.decode(3i16.to_ne_bytes().to_vec()).is_err());
        let c = codec(r#"{"offset": 32000}"#, &DataType::Int16).unwrap();
        assert!(c.decode(1000i16.to_ne_bytes().to_vec()).is_err());
        assert!(codec(r#"{"scale": 0}"#, &DataType::Int32).is_err());
        assert!(codec(r#"{"offset": 1, "bias": 2}"#, &DataType::Int32).is_err());
        assert!(codec("{}", &DataType::Bool).is_err());
    }
}
