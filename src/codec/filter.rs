//! numcodecs filters: `delta`, `fixedscaleoffset`, `quantize`, `bitround`,
//! `astype`, `packbits`, `shuffle` and `categorize`, decoded the way
//! numcodecs 0.16 decodes them.
//!
//! numcodecs filters see raw buffers and reinterpret them in the dtypes of
//! their own configuration (`"<i4"`, byte order included), so one
//! implementation serves both places a filter can sit: a Zarr v2 filter
//! (between the compressor and the array bytes) and zarr-python 3's
//! `numcodecs.*` array -> array codecs (on the native in-memory array).
//!
//! - `delta`: cumulative sum of the `astype` values, accumulated in `dtype`
//!   (integers wrap, floats round at their own width, as `np.cumsum` with
//!   `out=`).
//! - `fixedscaleoffset`: `enc / scale + offset`, computed in the `astype`
//!   float width (float64 for integer `astype`), cast to `dtype`.
//! - `quantize`, `astype`: a cast from the encoded to the decoded dtype;
//!   `bitround`: nothing (the rounding happened when writing).
//! - `packbits`: a count of padding bits, then the bits, most significant
//!   first; decodes to one 0/1 byte per element.
//! - `shuffle`: numcodecs' byte shuffle with `elementsize`.
//! - `categorize`: 1-based label indices to fixed-width UTF-32 strings
//!   (`<U n`; index 0 is the empty string).
//!
//! Invariant: output sizes follow from the input size and the
//! configuration, never from values inside the data.

use super::CodecError;
use crate::json::Value;
use crate::zarr::metadata::MetadataError;
use crate::zarr::numpy::{NumKind, NumType};

/// One numcodecs filter, configured.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// `delta`: each element stored as its difference from the previous.
    Delta {
        /// The decoded elements' type.
        dtype: NumType,
        /// The stored differences' type.
        astype: NumType,
    },
    /// `fixedscaleoffset`: stored as `(x - offset) * scale`, rounded.
    FixedScaleOffset {
        /// The factor applied when encoding.
        scale: f64,
        /// The offset subtracted when encoding.
        offset: f64,
        /// The decoded elements' type.
        dtype: NumType,
        /// The stored elements' type.
        astype: NumType,
    },
    /// `quantize` and `astype`: a cast from `encoded` to `decoded`.
    Cast {
        /// Which of the two (`quantize`, `astype`).
        id: &'static str,
        /// The decoded elements' type.
        decoded: NumType,
        /// The stored elements' type.
        encoded: NumType,
    },
    /// `bitround`: mantissa bits dropped when encoding, nothing to undo.
    BitRound,
    /// `packbits`: booleans, eight to a byte.
    PackBits,
    /// `shuffle`: the bytes of each element stored by significance.
    Shuffle {
        /// The bytes of one element.
        elementsize: usize,
    },
    /// `cells[k]` is label `k + 1` as one `<U width` element, encoded once
    /// when the configuration is read.
    Categorize {
        /// The labels, each as one decoded element.
        cells: Vec<Vec<u8>>,
        /// The characters of one decoded element.
        width: usize,
        /// The stored label numbers' type.
        astype: NumType,
    },
}

/// Whether `id` names a numcodecs filter (rather than a compressor).
pub fn is_filter(id: &str) -> bool {
    matches!(
        id,
        "delta" | "fixedscaleoffset" | "quantize" | "bitround" | "astype" | "packbits" | "shuffle" | "categorize"
    )
}

impl Filter {
    /// Parse filter `id`'s configuration. `decoded` is the type of the
    /// array the filter decodes to, for configurations that leave it out.
    pub fn from_configuration(
        id: &str,
        config: Option<&Value>,
        decoded: Option<NumType>,
    ) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: id.into(),
            reason,
        };
        let get = |k: &str| config.and_then(|c| c.get(k)).filter(|v| !matches!(v, Value::Null));
        let dtype_of = |k: &str, default: Option<NumType>| -> Result<NumType, MetadataError> {
            match get(k) {
                Some(Value::Str(s)) => NumType::parse(s).map_err(|e| bad(format!("{k}: {e}"))),
                Some(v) => Err(bad(format!("{k} {v} is not a dtype string"))),
                None => default.ok_or_else(|| bad(format!("no `{k}`"))),
            }
        };
        let number = |k: &str, default: f64| -> Result<f64, MetadataError> {
            match get(k) {
                None => Ok(default),
                Some(v) => v.as_f64().ok_or_else(|| bad(format!("{k} {v} is not a number"))),
            }
        };
        Ok(match id {
            "delta" => {
                let dtype = dtype_of("dtype", decoded)?;
                Filter::Delta {
                    dtype,
                    astype: dtype_of("astype", Some(dtype))?,
                }
            }
            "fixedscaleoffset" => {
                let dtype = dtype_of("dtype", decoded)?;
                Filter::FixedScaleOffset {
                    scale: number("scale", 1.0)?,
                    offset: number("offset", 0.0)?,
                    dtype,
                    astype: dtype_of("astype", Some(dtype))?,
                }
            }
            "quantize" => {
                let decoded = dtype_of("dtype", decoded)?;
                Filter::Cast {
                    id: "quantize",
                    decoded,
                    encoded: dtype_of("astype", Some(decoded))?,
                }
            }
            "astype" => {
                let decoded = dtype_of("decode_dtype", decoded)?;
                Filter::Cast {
                    id: "astype",
                    decoded,
                    encoded: dtype_of("encode_dtype", None)?,
                }
            }
            "bitround" => Filter::BitRound,
            "packbits" => Filter::PackBits,
            "shuffle" => {
                let size = number("elementsize", decoded.map_or(4.0, |d| d.size as f64))?;
                if !(0.0..=1024.0).contains(&size) || size.fract() != 0.0 {
                    return Err(bad(format!("elementsize {size} is out of range")));
                }
                Filter::Shuffle {
                    elementsize: size as usize,
                }
            }
            "categorize" => {
                let Some(Value::Str(dt)) = get("dtype") else {
                    return Err(bad("no `dtype` string".into()));
                };
                let (big, width) = crate::zarr::numpy::utf32_width(dt)
                    .ok_or_else(|| bad(format!("dtype {dt} is not a fixed-width unicode type (<U n)")))?;
                let labels = match get("labels") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|l| l.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| bad("labels are not all strings".into()))?,
                    _ => return Err(bad("no `labels` list".into())),
                };
                let astype = dtype_of("astype", None)?;
                if astype.kind != NumKind::UInt {
                    return Err(bad("astype is not an unsigned integer type".into()));
                }
                let cells = labels
                    .iter()
                    .map(|l| {
                        let mut cell = vec![0u8; width * 4];
                        for (k, ch) in l.chars().take(width).enumerate() {
                            let c = ch as u32;
                            let b = if big { c.to_be_bytes() } else { c.to_le_bytes() };
                            cell[k * 4..k * 4 + 4].copy_from_slice(&b);
                        }
                        cell
                    })
                    .collect();
                Filter::Categorize { cells, width, astype }
            }
            other => return Err(bad(format!("`{other}` is not a numcodecs filter"))),
        })
    }

    /// Its numcodecs `id`.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Delta { .. } => "delta",
            Filter::FixedScaleOffset { .. } => "fixedscaleoffset",
            Filter::Cast { id, .. } => id,
            Filter::BitRound => "bitround",
            Filter::PackBits => "packbits",
            Filter::Shuffle { .. } => "shuffle",
            Filter::Categorize { .. } => "categorize",
        }
    }

    /// The element type the filter's encoded side holds, if it fixes one.
    pub fn encoded_type(&self) -> Option<NumType> {
        match self {
            Filter::Delta { astype, .. } | Filter::FixedScaleOffset { astype, .. } => Some(*astype),
            Filter::Cast { encoded, .. } => Some(*encoded),
            Filter::Categorize { astype, .. } => Some(*astype),
            Filter::PackBits => Some(NumType::U8),
            Filter::BitRound | Filter::Shuffle { .. } => None,
        }
    }

    /// Encoded bytes for `decoded` bytes (whose elements are `item` bytes).
    pub fn encoded_size(&self, decoded: usize, item: usize) -> Option<usize> {
        let per = |t: &NumType, d: usize| decoded / d.max(1) * t.size;
        match self {
            Filter::Delta { dtype, astype } | Filter::FixedScaleOffset { dtype, astype, .. } => {
                Some(per(astype, dtype.size))
            }
            Filter::Cast {
                decoded: d, encoded, ..
            } => Some(per(encoded, d.size)),
            Filter::Categorize { width, astype, .. } => Some(per(astype, width * 4)),
            Filter::PackBits => Some(1 + (decoded / item.max(1)).div_ceil(8)),
            Filter::BitRound | Filter::Shuffle { .. } => Some(decoded),
        }
    }

    /// The most bytes decoding `encoded` bytes can produce.
    pub fn decoded_bound(&self, encoded: usize) -> usize {
        let per = |from: usize, to: usize| (encoded / from.max(1)).saturating_mul(to);
        match self {
            Filter::Delta { dtype, astype } | Filter::FixedScaleOffset { dtype, astype, .. } => {
                per(astype.size, dtype.size)
            }
            Filter::Cast { decoded, encoded, .. } => per(encoded.size, decoded.size),
            Filter::Categorize { width, astype, .. } => per(astype.size, width * 4),
            Filter::PackBits => encoded.saturating_mul(8),
            Filter::BitRound | Filter::Shuffle { .. } => encoded,
        }
    }

    /// Decode one buffer, producing at most `limit` bytes.
    pub fn decode(&self, input: Vec<u8>, limit: usize) -> Result<Vec<u8>, CodecError> {
        let codec = self.name();
        // packbits knows its exact size only from its first byte (below).
        if !matches!(self, Filter::PackBits) && self.decoded_bound(input.len()) > limit {
            return Err(CodecError::TooLarge { codec, limit });
        }
        let whole = |t: &NumType| -> Result<usize, CodecError> {
            if input.len().is_multiple_of(t.size) {
                Ok(input.len() / t.size)
            } else {
                Err(CodecError::Corrupt {
                    codec,
                    reason: format!(
                        "{} bytes is not a whole number of {}-byte elements",
                        input.len(),
                        t.size
                    ),
                })
            }
        };
        Ok(match self {
            Filter::Delta { dtype, astype } => {
                let n = whole(astype)?;
                let mut out = vec![0u8; n * dtype.size];
                let mut acc = Num::zero(dtype.kind);
                for i in 0..n {
                    acc = acc.add(astype.read(&input, i).cast(dtype.kind), *dtype);
                    dtype.write(&mut out, i, acc);
                }
                out
            }
            Filter::FixedScaleOffset {
                scale,
                offset,
                dtype,
                astype,
            } => {
                let n = whole(astype)?;
                let mut out = vec![0u8; n * dtype.size];
                let single = astype.kind == NumKind::Float && astype.size <= 4;
                for i in 0..n {
                    let e = astype.read(&input, i).as_f64();
                    let v = if single {
                        f64::from(e as f32 / *scale as f32 + *offset as f32)
                    } else {
                        e / scale + offset
                    };
                    dtype.write(&mut out, i, Num::F(v).cast(dtype.kind));
                }
                out
            }
            Filter::Cast { decoded, encoded, .. } => {
                let n = whole(encoded)?;
                let mut out = vec![0u8; n * decoded.size];
                for i in 0..n {
                    decoded.write(&mut out, i, encoded.read(&input, i).cast(decoded.kind));
                }
                out
            }
            Filter::BitRound => input,
            Filter::PackBits => {
                let Some((&pad, bits)) = input.split_first() else {
                    return Err(CodecError::Truncated { codec, len: 0 });
                };
                let total = bits.len() * 8;
                if pad > 7 || usize::from(pad) > total {
                    return Err(CodecError::Corrupt {
                        codec,
                        reason: format!("{pad} padding bits"),
                    });
                }
                if total - usize::from(pad) > limit {
                    return Err(CodecError::TooLarge { codec, limit });
                }
                (0..total - usize::from(pad))
                    .map(|i| (bits[i / 8] >> (7 - i % 8)) & 1)
                    .collect()
            }
            Filter::Shuffle { elementsize } => {
                let size = *elementsize;
                if size <= 1 {
                    return Ok(input);
                }
                if !input.len().is_multiple_of(size) {
                    return Err(CodecError::Corrupt {
                        codec,
                        reason: format!("{} bytes is not a multiple of elementsize {size}", input.len()),
                    });
                }
                let count = input.len() / size;
                let mut out = vec![0u8; input.len()];
                for (b, plane) in input.chunks(count.max(1)).enumerate() {
                    for (i, &x) in plane.iter().enumerate() {
                        out[i * size + b] = x;
                    }
                }
                out
            }
            Filter::Categorize { cells, width, astype } => {
                let n = whole(astype)?;
                let mut out = vec![0u8; n * width * 4];
                for i in 0..n {
                    let Num::U(k) = astype.read(&input, i) else { continue };
                    if let Some(cell) = (k as usize).checked_sub(1).and_then(|k| cells.get(k)) {
                        out[i * width * 4..(i + 1) * width * 4].copy_from_slice(cell);
                    }
                }
                out
            }
        })
    }
}

/// One element's value, held at full width.
#[derive(Debug, Clone, Copy)]
pub enum Num {
    /// A signed integer.
    I(i64),
    /// An unsigned integer.
    U(u64),
    /// A float.
    F(f64),
}

impl Num {
    fn zero(kind: NumKind) -> Num {
        Num::I(0).cast(kind)
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::U(u) => u as f64,
            Num::F(f) => f,
        }
    }

    /// numpy's `astype` to a kind (C casts: floats truncate toward zero).
    fn cast(self, kind: NumKind) -> Num {
        match (kind, self) {
            (NumKind::Float, v) => Num::F(v.as_f64()),
            (NumKind::Int | NumKind::Bool, Num::I(i)) => Num::I(i),
            (NumKind::Int | NumKind::Bool, Num::U(u)) => Num::I(u as i64),
            (NumKind::Int | NumKind::Bool, Num::F(f)) => Num::I(f as i64),
            (NumKind::UInt, Num::I(i)) => Num::U(i as u64),
            (NumKind::UInt, Num::U(u)) => Num::U(u),
            (NumKind::UInt, Num::F(f)) if f < 0.0 => Num::U(f as i64 as u64),
            (NumKind::UInt, Num::F(f)) => Num::U(f as u64),
        }
    }

    /// `self + other` at the width of `t` (integers wrap).
    fn add(self, other: Num, t: NumType) -> Num {
        match (self, other) {
            (Num::I(a), Num::I(b)) => Num::I(t.wrap_i(a.wrapping_add(b))),
            (Num::U(a), Num::U(b)) => Num::U(t.wrap_u(a.wrapping_add(b))),
            (a, b) => Num::F(t.round_f(a.as_f64() + b.as_f64())),
        }
    }
}

impl NumType {
    fn read(&self, buf: &[u8], i: usize) -> Num {
        let mut b = [0u8; 8];
        let src = &buf[i * self.size..(i + 1) * self.size];
        if self.big {
            b[8 - self.size..].copy_from_slice(src);
            b.reverse();
        } else {
            b[..self.size].copy_from_slice(src);
        }
        let raw = u64::from_le_bytes(b);
        let bits = self.size * 8;
        match self.kind {
            NumKind::Bool => Num::I(i64::from(raw != 0)),
            NumKind::UInt => Num::U(raw),
            NumKind::Int => Num::I(((raw << (64 - bits)) as i64) >> (64 - bits)),
            NumKind::Float => Num::F(match self.size {
                2 => half::f16::from_bits(raw as u16).to_f64(),
                4 => f64::from(f32::from_bits(raw as u32)),
                _ => f64::from_bits(raw),
            }),
        }
    }

    fn write(&self, out: &mut [u8], i: usize, v: Num) {
        let raw: u64 = match (self.kind, v) {
            (NumKind::Float, v) => match self.size {
                2 => u64::from(half::f16::from_f64(v.as_f64()).to_bits()),
                4 => u64::from((v.as_f64() as f32).to_bits()),
                _ => v.as_f64().to_bits(),
            },
            (NumKind::Bool, v) => u64::from(v.as_f64() != 0.0),
            (_, Num::I(x)) => x as u64,
            (_, Num::U(x)) => x,
            (_, Num::F(x)) => x as i64 as u64,
        };
        let bytes = raw.to_le_bytes();
        let dst = &mut out[i * self.size..(i + 1) * self.size];
        dst.copy_from_slice(&bytes[..self.size]);
        if self.big {
            dst.reverse();
        }
    }

    fn wrap_i(&self, x: i64) -> i64 {
        let bits = self.size * 8;
        if bits >= 64 {
            x
        } else {
            (x << (64 - bits)) >> (64 - bits)
        }
    }

    fn wrap_u(&self, x: u64) -> u64 {
        let bits = self.size * 8;
        if bits >= 64 { x } else { x & ((1u64 << bits) - 1) }
    }

    fn round_f(&self, x: f64) -> f64 {
        match self.size {
            2 => half::f16::from_f64(x).to_f64(),
            4 => f64::from(x as f32),
            _ => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> NumType {
        NumType::parse(s).unwrap()
    }

    #[test]
    fn delta_wraps_and_casts() {
        let f = Filter::Delta {
            dtype: t("<i2"),
            astype: t("|i1"),
        };
        let enc: Vec<u8> = [100i8, 100, 100, -128].iter().map(|&x| x as u8).collect();
        let out = f.decode(enc, 1 << 20).unwrap();
        let vals: Vec<i16> = out.chunks(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
        assert_eq!(vals, [100, 200, 300, 172]);
    }

    #[test]
    fn packbits_and_shuffle() {
        let out = Filter::PackBits.decode(vec![5, 0b1010_0000], 1 << 20).unwrap();
        assert_eq!(out, [1, 0, 1]);
        assert!(Filter::PackBits.decode(vec![9, 0], 1 << 20).is_err());
        assert!(Filter::PackBits.decode(vec![], 1 << 20).is_err());
        let s = Filter::Shuffle { elementsize: 2 };
        assert_eq!(s.decode(vec![1, 3, 2, 4], 1 << 20).unwrap(), [1, 2, 3, 4]);
        assert!(s.decode(vec![1, 2, 3], 1 << 20).is_err());
    }

    #[test]
    fn scale_offset_and_cast() {
        let f = Filter::FixedScaleOffset {
            scale: 10.0,
            offset: 1000.0,
            dtype: t("<f8"),
            astype: t("|u1"),
        };
        let out = f.decode(vec![0, 25], 1 << 20).unwrap();
        assert_eq!(f64::from_le_bytes(out[8..].try_into().unwrap()), 1002.5);
        let c = Filter::Cast {
            id: "astype",
            decoded: t("<i4"),
            encoded: t(">f4"),
        };
        assert_eq!(
            c.decode((-2.75f32).to_be_bytes().to_vec(), 1 << 20).unwrap(),
            (-2i32).to_le_bytes()
        );
        assert!(c.decode(vec![1, 2, 3], 1 << 20).is_err());
    }
}
