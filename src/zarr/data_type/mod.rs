//! Zarr v3 core data types and their fill values, and records (`struct`)
//! of them in the child module [`record`].
//!
//! A [`DataType`] knows its item size and how its elements are byte-swapped.
//! [`FillValue`] holds one element already encoded in the host's native byte
//! order, so an absent chunk is that element repeated.
//!
//! Fill value forms accepted (core spec, "fill_value"): JSON booleans;
//! integers; numbers; `"NaN"`, `"Infinity"`, `"-Infinity"`; `"0x…"` bit
//! patterns (NaN payloads kept exactly); bare `NaN`/`Infinity` tokens;
//! `[re, im]` pairs for complex types; byte lists for `r*`.

use std::sync::Arc;

use base64::Engine;

use super::extension::{MetadataError, extension_name};
use crate::json::Value;

mod fill;
pub mod narrow;
pub mod record;
pub use fill::{FillError, FillNumber, fill_value_fits, fill_value_number};
use record::Record;

/// An element type from the core spec (plus the `r*` raw types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataType {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16`: IEEE half precision.
    Float16,
    /// `bfloat16`: stored as 2 bytes (the top half of a float32), shown
    /// and held in memory as float32.
    BFloat16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64`: two float32s, real then imaginary.
    Complex64,
    /// `complex128`: two float64s, real then imaginary.
    Complex128,
    /// `r<bits>`: opaque bytes, `bits / 8` per element.
    Raw(usize),
    /// `numpy.datetime64`: int64 counts of `scale` × `unit` since
    /// 1970-01-01T00:00:00; `i64::MIN` is NaT.
    DateTime64 {
        /// The unit counted.
        unit: TimeUnit,
        /// How many units one count is.
        scale: u32,
    },
    /// `numpy.timedelta64`: int64 counts of `scale` × `unit`.
    TimeDelta64 {
        /// The unit counted.
        unit: TimeUnit,
        /// How many units one count is.
        scale: u32,
    },
    /// `null_terminated_bytes` (numpy `S n`): `n` bytes, NUL-padded.
    FixedBytes(usize),
    /// `fixed_length_utf32` (numpy `U n`): `n` UTF-32 code units.
    FixedUtf32(usize),
    /// `string`: variable-length UTF-8. Decoded chunks hold the text form
    /// of [`super::text`], not fixed-size elements.
    String,
    /// `bytes` (zarr-python: `variable_length_bytes`): variable-length
    /// bytes, decoded to the same text form.
    Bytes,
    /// `struct` (legacy `structured`; Zarr v2 record lists): packed
    /// records of named fields, each in the host's byte order once decoded.
    Struct(Arc<Record>),
    /// A type narrower than any classic type (`int4`, `float8_e4m3fn`, …)
    /// as its codec chain stores it. An array of one shows
    /// [`narrow::Narrow::shown`] instead (`ArrayMetadata::narrow`), so only
    /// codec chains meet this variant.
    Narrow(narrow::Narrow),
}

/// A numpy datetime unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeUnit {
    /// `Y`.
    Year,
    /// `M`.
    Month,
    /// `W`.
    Week,
    /// `D`.
    Day,
    /// `h`.
    Hour,
    /// `m`.
    Minute,
    /// `s`.
    Second,
    /// `ms`.
    Millisecond,
    /// `us`.
    Microsecond,
    /// `ns`.
    Nanosecond,
    /// `ps`.
    Picosecond,
    /// `fs`.
    Femtosecond,
    /// `as`.
    Attosecond,
    /// `generic`: a count with no unit.
    Generic,
}

impl TimeUnit {
    const ALL: [(TimeUnit, &'static str, &'static str); 14] = [
        (TimeUnit::Year, "Y", "years"),
        (TimeUnit::Month, "M", "months"),
        (TimeUnit::Week, "W", "weeks"),
        (TimeUnit::Day, "D", "days"),
        (TimeUnit::Hour, "h", "hours"),
        (TimeUnit::Minute, "m", "minutes"),
        (TimeUnit::Second, "s", "seconds"),
        (TimeUnit::Millisecond, "ms", "milliseconds"),
        (TimeUnit::Microsecond, "us", "microseconds"),
        (TimeUnit::Nanosecond, "ns", "nanoseconds"),
        (TimeUnit::Picosecond, "ps", "picoseconds"),
        (TimeUnit::Femtosecond, "fs", "femtoseconds"),
        (TimeUnit::Attosecond, "as", "attoseconds"),
        (TimeUnit::Generic, "generic", "generic"),
    ];

    /// numpy's code (`"s"`, `"ms"`, …).
    pub fn parse(code: &str) -> Option<TimeUnit> {
        Self::ALL.iter().find(|(_, c, _)| *c == code).map(|(u, _, _)| *u)
    }

    /// numpy's code for it.
    pub fn code(self) -> &'static str {
        Self::ALL.iter().find(|(u, _, _)| *u == self).map_or("", |(_, c, _)| c)
    }

    /// The UDUNITS/CF word (`"seconds"`).
    pub fn cf_name(self) -> &'static str {
        Self::ALL.iter().find(|(u, _, _)| *u == self).map_or("", |(_, _, n)| n)
    }
}

impl DataType {
    /// Parse the `data_type` member (a name, or an object with a `name`).
    pub fn from_json(v: &Value) -> Result<DataType, MetadataError> {
        DataType::parse_at(v, 0)
    }

    /// [`DataType::from_json`] for a type `depth` records deep.
    fn parse_at(v: &Value, depth: usize) -> Result<DataType, MetadataError> {
        let name = extension_name(v, "data_type")?;
        Ok(match name {
            "bool" => DataType::Bool,
            "int8" => DataType::Int8,
            "int16" => DataType::Int16,
            "int32" => DataType::Int32,
            "int64" => DataType::Int64,
            "uint8" => DataType::UInt8,
            "uint16" => DataType::UInt16,
            "uint32" => DataType::UInt32,
            "uint64" => DataType::UInt64,
            "float16" => DataType::Float16,
            "bfloat16" => DataType::BFloat16,
            "float32" => DataType::Float32,
            "float64" => DataType::Float64,
            "complex64" => DataType::Complex64,
            "complex128" => DataType::Complex128,
            // zarr-python's extension for numpy `V<n>`: {"name": "raw_bytes",
            // "configuration": {"length_bytes": n}}, fill value in base64.
            "raw_bytes" => {
                let n = v
                    .get("configuration")
                    .and_then(|c| c.get("length_bytes"))
                    .and_then(Value::as_u64)
                    .filter(|&n| n > 0 && n <= 1024 * 1024)
                    .ok_or_else(|| MetadataError::UnknownDataType("raw_bytes without a valid length_bytes".into()))?;
                DataType::Raw(n as usize)
            }
            "numpy.datetime64" | "numpy.timedelta64" => {
                let c = v.get("configuration");
                let unit = c
                    .and_then(|c| c.get("unit"))
                    .and_then(Value::as_str)
                    .and_then(TimeUnit::parse)
                    .ok_or_else(|| MetadataError::UnknownDataType(format!("{name} without a known unit")))?;
                let scale = match c.and_then(|c| c.get("scale_factor")) {
                    None => 1,
                    Some(s) => s
                        .as_u64()
                        .and_then(|s| u32::try_from(s).ok())
                        .filter(|&s| s > 0)
                        .ok_or_else(|| MetadataError::UnknownDataType(format!("{name} with scale_factor {s}")))?,
                };
                if name == "numpy.datetime64" {
                    DataType::DateTime64 { unit, scale }
                } else {
                    DataType::TimeDelta64 { unit, scale }
                }
            }
            "fixed_length_utf32" | "null_terminated_bytes" => {
                let n = v
                    .get("configuration")
                    .and_then(|c| c.get("length_bytes"))
                    .and_then(Value::as_u64)
                    .filter(|&n| n > 0 && n <= 1024 * 1024 && (name != "fixed_length_utf32" || n % 4 == 0))
                    .ok_or_else(|| MetadataError::UnknownDataType(format!("{name} without a valid length_bytes")))?
                    as usize;
                if name == "fixed_length_utf32" {
                    DataType::FixedUtf32(n / 4)
                } else {
                    DataType::FixedBytes(n)
                }
            }
            "string" => DataType::String,
            "bytes" | "variable_length_bytes" => DataType::Bytes,
            "struct" | "structured" => DataType::Struct(Arc::new(Record::from_v3(v.get("configuration"), depth)?)),
            "complex_float32" => DataType::Complex64,
            "complex_float64" => DataType::Complex128,
            raw if raw.starts_with('r') => {
                let bits: usize = raw[1..]
                    .parse()
                    .map_err(|_| MetadataError::UnknownDataType(raw.to_string()))?;
                if bits == 0 || !bits.is_multiple_of(8) || bits > 8 * 1024 * 1024 {
                    return Err(MetadataError::UnknownDataType(raw.to_string()));
                }
                DataType::Raw(bits / 8)
            }
            other => match narrow::Narrow::parse(other) {
                Some(n) => DataType::Narrow(n),
                None => return Err(MetadataError::UnknownDataType(other.to_string())),
            },
        })
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        match self {
            DataType::Bool | DataType::Int8 | DataType::UInt8 => 1,
            DataType::Int16 | DataType::UInt16 | DataType::Float16 => 2,
            DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::BFloat16 => 4,
            DataType::Int64 | DataType::UInt64 | DataType::Float64 | DataType::Complex64 => 8,
            DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => 8,
            DataType::Complex128 => 16,
            DataType::Raw(n) | DataType::FixedBytes(n) => *n,
            DataType::FixedUtf32(n) => 4 * n,
            DataType::Struct(r) => r.size(),
            DataType::Narrow(n) => n.stored_size(),
            // No fixed size: see `element_size`.
            DataType::String | DataType::Bytes => 0,
        }
    }

    /// Bytes per element, or `None` for a variable-length type.
    pub fn element_size(&self) -> Option<usize> {
        match self {
            DataType::String | DataType::Bytes => None,
            other => Some(other.size()),
        }
    }

    /// Whether elements are single numbers (integers, floats, times):
    /// exactly the types [`DataType::value_f64`] reads.
    pub fn is_number(&self) -> bool {
        !matches!(
            self,
            DataType::Bool
                | DataType::Complex64
                | DataType::Complex128
                | DataType::Raw(_)
                | DataType::Struct(_)
                | DataType::FixedBytes(_)
                | DataType::FixedUtf32(_)
                | DataType::String
                | DataType::Bytes
                | DataType::Narrow(_)
        )
    }

    /// Whether the array's values are strings (shown as `data.txt`).
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            DataType::String | DataType::Bytes | DataType::FixedBytes(_) | DataType::FixedUtf32(_)
        )
    }

    /// Element `i` of a decoded buffer (native byte order) as a number, or
    /// `None` for a type with no order (bool, complex, raw) or past the end.
    pub fn value_f64(&self, buffer: &[u8], i: usize) -> Option<f64> {
        if !self.is_number() {
            return None;
        }
        let at = |n: usize| buffer.get(i * n..(i + 1) * n);
        Some(match self {
            DataType::Int8 => f64::from(at(1)?[0] as i8),
            DataType::UInt8 => f64::from(at(1)?[0]),
            DataType::Int16 => f64::from(i16::from_ne_bytes(at(2)?.try_into().ok()?)),
            DataType::UInt16 => f64::from(u16::from_ne_bytes(at(2)?.try_into().ok()?)),
            DataType::Float16 => half::f16::from_ne_bytes(at(2)?.try_into().ok()?).to_f64(),
            DataType::Int32 => f64::from(i32::from_ne_bytes(at(4)?.try_into().ok()?)),
            DataType::UInt32 => f64::from(u32::from_ne_bytes(at(4)?.try_into().ok()?)),
            DataType::Float32 | DataType::BFloat16 => f64::from(f32::from_ne_bytes(at(4)?.try_into().ok()?)),
            DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
                i64::from_ne_bytes(at(8)?.try_into().ok()?) as f64
            }
            DataType::UInt64 => u64::from_ne_bytes(at(8)?.try_into().ok()?) as f64,
            DataType::Float64 => f64::from_ne_bytes(at(8)?.try_into().ok()?),
            _ => return None,
        })
    }

    /// The unit that byte order applies to: the whole element, each half of
    /// a complex number, or nothing (1 for single bytes and raw types).
    pub fn swap_unit(&self) -> usize {
        match self {
            DataType::Complex64 => 4,
            DataType::Complex128 => 8,
            // A record's values are swapped field by field (`Record::to_native`).
            DataType::Raw(_) | DataType::FixedBytes(_) | DataType::String | DataType::Bytes | DataType::Struct(_) => 1,
            DataType::FixedUtf32(_) => 4,
            DataType::Narrow(n) => n.swap_unit(),
            other => other.size(),
        }
    }

    /// The values of an integer type (bool counts as 0..=1).
    pub fn int_range(&self) -> Option<(i128, i128)> {
        Some(match self {
            DataType::Bool => (0, 1),
            DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
            DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
            DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
            DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
                (i64::MIN.into(), i64::MAX.into())
            }
            DataType::UInt8 => (0, u8::MAX.into()),
            DataType::UInt16 => (0, u16::MAX.into()),
            DataType::UInt32 => (0, u32::MAX.into()),
            DataType::UInt64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }

    /// The spec's identifier.
    pub fn name(&self) -> String {
        match self {
            DataType::Bool => "bool".into(),
            DataType::Int8 => "int8".into(),
            DataType::Int16 => "int16".into(),
            DataType::Int32 => "int32".into(),
            DataType::Int64 => "int64".into(),
            DataType::UInt8 => "uint8".into(),
            DataType::UInt16 => "uint16".into(),
            DataType::UInt32 => "uint32".into(),
            DataType::UInt64 => "uint64".into(),
            DataType::Float16 => "float16".into(),
            DataType::BFloat16 => "bfloat16".into(),
            DataType::Float32 => "float32".into(),
            DataType::Float64 => "float64".into(),
            DataType::Complex64 => "complex64".into(),
            DataType::Complex128 => "complex128".into(),
            DataType::Raw(n) => format!("r{}", n * 8),
            DataType::DateTime64 { unit, scale } => format!("numpy.datetime64[{}]", scaled(*unit, *scale)),
            DataType::TimeDelta64 { unit, scale } => format!("numpy.timedelta64[{}]", scaled(*unit, *scale)),
            DataType::FixedBytes(n) => format!("null_terminated_bytes[{n}]"),
            DataType::FixedUtf32(n) => format!("fixed_length_utf32[{n}]"),
            DataType::String => "string".into(),
            DataType::Bytes => "bytes".into(),
            DataType::Struct(r) => format!("struct {}", r.describe()),
            DataType::Narrow(n) => n.name().into(),
        }
    }

    /// The type the codec chain stores (bfloat16's 2-byte halves are
    /// decoded as `UInt16` bits, then widened to float32 by the array).
    pub fn storage(&self) -> DataType {
        match self {
            DataType::BFloat16 => DataType::UInt16,
            other => other.clone(),
        }
    }

    /// Whether the type is a numpy datetime or timedelta.
    pub fn is_time(&self) -> bool {
        matches!(self, DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. })
    }

    /// Encode a JSON fill value as one native-endian element.
    pub fn fill_value(&self, v: &Value) -> Result<FillValue, MetadataError> {
        let bad = || MetadataError::BadFillValue {
            data_type: self.name(),
            value: v.to_string(),
        };
        let bytes = match self {
            DataType::Bool => match v {
                Value::Bool(b) => vec![u8::from(*b)],
                Value::Int(0) => vec![0],
                Value::Int(1) => vec![1],
                _ => return Err(bad()),
            },
            DataType::Int8 => int_fill::<i8>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::Int16 => int_fill::<i16>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::Int32 => int_fill::<i32>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::Int64 => int_fill::<i64>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => match v {
                Value::Str(s) if s == "NaT" => i64::MIN.to_ne_bytes().to_vec(),
                _ => int_fill::<i64>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            },
            DataType::FixedBytes(n) | DataType::FixedUtf32(n) => {
                let Value::Str(s) = v else { return Err(bad()) };
                string_fill(self, s, *n).ok_or_else(bad)?
            }
            // The fill of a variable-length type is its line of text.
            DataType::String | DataType::Bytes => {
                let value = match v {
                    Value::Null => Vec::new(),
                    Value::Str(s) if *self == DataType::Bytes => base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .unwrap_or_else(|_| s.as_bytes().to_vec()),
                    Value::Str(s) => s.as_bytes().to_vec(),
                    // zarr-python reads a numeric fill (v2 writes 0) as its text.
                    Value::Int(_) | Value::UInt(_) | Value::Float(_) => v.to_string().into_bytes(),
                    _ => return Err(bad()),
                };
                let mut line = Vec::new();
                super::text::push_line(&mut line, &value);
                line
            }
            DataType::UInt8 => int_fill::<u8>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::UInt16 => int_fill::<u16>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::UInt32 => int_fill::<u32>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::UInt64 => int_fill::<u64>(v).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            DataType::Float16 | DataType::Float32 | DataType::Float64 => float_fill(v, self.size()).ok_or_else(bad)?,
            // A bfloat16 "0x…" is its own 16 bits: the top half of a float32.
            DataType::BFloat16 => match v {
                Value::Str(h) if h.starts_with("0x") || h.starts_with("0X") => {
                    let bits = u16::from_str_radix(&h[2..], 16).map_err(|_| bad())?;
                    (u32::from(bits) << 16).to_ne_bytes().to_vec()
                }
                Value::Str(n) if n == "NaN" => (0x7fc0_u32 << 16).to_ne_bytes().to_vec(),
                _ => float_fill(v, 4).ok_or_else(bad)?,
            },
            DataType::Complex64 | DataType::Complex128 => {
                let half = self.size() / 2;
                match v.as_array() {
                    Some([re, im]) => {
                        let mut out = float_fill(re, half).ok_or_else(bad)?;
                        out.extend(float_fill(im, half).ok_or_else(bad)?);
                        out
                    }
                    _ => return Err(bad()),
                }
            }
            DataType::Struct(r) => return r.fill_value(v).ok_or_else(bad),
            DataType::Narrow(n) => return n.fill_value(v).and_then(|f| n.narrow_fill(&f)).ok_or_else(bad),
            DataType::Raw(n) => {
                if let Value::Str(b64) = v {
                    use base64::Engine;
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|_| bad())?;
                    return if bytes.len() == *n {
                        Ok(FillValue(bytes))
                    } else {
                        Err(bad())
                    };
                }
                let items = v.as_array().ok_or_else(bad)?;
                if items.len() != *n {
                    return Err(bad());
                }
                items
                    .iter()
                    .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(bad)?
            }
        };
        Ok(FillValue(bytes))
    }
}

/// `numpy` spells a scaled unit `10s`.
fn scaled(unit: TimeUnit, scale: u32) -> String {
    if scale == 1 {
        unit.code().to_string()
    } else {
        format!("{scale}{}", unit.code())
    }
}

/// The fill element of a fixed-length string type: the string itself
/// (zarr-python writes `""`), or base64 of the element's bytes (Zarr v2).
fn string_fill(dt: &DataType, s: &str, n: usize) -> Option<Vec<u8>> {
    let size = dt.size();
    let mut out = vec![0u8; size];
    match dt {
        DataType::FixedUtf32(_) if s.chars().count() <= n => {
            for (k, c) in s.chars().enumerate() {
                out[4 * k..4 * k + 4].copy_from_slice(&(c as u32).to_ne_bytes());
            }
            Some(out)
        }
        DataType::FixedBytes(_) if s.is_empty() => Some(out),
        _ => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
            if bytes.len() > size {
                return None;
            }
            out[..bytes.len()].copy_from_slice(&bytes);
            if let DataType::FixedUtf32(_) = dt {
                // base64 holds little-endian code units (numpy's `<U`).
                for unit in out.chunks_mut(4) {
                    let c = u32::from_le_bytes(unit.try_into().ok()?);
                    unit.copy_from_slice(&c.to_ne_bytes());
                }
            }
            Some(out)
        }
    }
}

/// One element in native byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue(pub Vec<u8>);

impl FillValue {
    /// `count` copies of the element.
    pub fn repeat(&self, count: usize) -> Vec<u8> {
        if self.0.iter().all(|&b| b == 0) {
            return vec![0; count * self.0.len()];
        }
        self.0.repeat(count)
    }
}

fn int_fill<T: TryFrom<i64> + TryFrom<u64>>(v: &Value) -> Option<T> {
    match *v {
        Value::Int(i) => T::try_from(i).ok(),
        Value::UInt(u) => T::try_from(u).ok(),
        // Some writers spell integral fill values as floats (`0.0`).
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => T::try_from(f as i64).ok(),
        _ => None,
    }
}

/// A float fill value of `size` bytes (2, 4 or 8), native-endian.
fn float_fill(v: &Value, size: usize) -> Option<Vec<u8>> {
    let x = match v {
        Value::Str(s) if s.starts_with("0x") || s.starts_with("0X") => {
            // The spec's "0xYYYYYYYY": exactly the type's width in hex
            // digits. "0x7fc0" for a float32 is refused, not read as the
            // denormal 0x00007fc0.
            let hex = &s[2..];
            if hex.len() != size * 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let bits = u64::from_str_radix(hex, 16).ok()?;
            return Some(match size {
                2 => (bits as u16).to_ne_bytes().to_vec(),
                4 => (bits as u32).to_ne_bytes().to_vec(),
                _ => bits.to_ne_bytes().to_vec(),
            });
        }
        Value::Str(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            _ => return None,
        },
        other => other.as_f64()?,
    };
    Some(encode_float(x, size))
}

/// `x` as a native-endian float of `size` bytes. NaN becomes the canonical
/// quiet NaN of that width (sign 0, top mantissa bit only), as the spec says.
pub fn encode_float(x: f64, size: usize) -> Vec<u8> {
    match size {
        2 => {
            let h = if x.is_nan() {
                half::f16::from_bits(0x7e00)
            } else {
                half::f16::from_f64(x)
            };
            h.to_bits().to_ne_bytes().to_vec()
        }
        4 => {
            let f = if x.is_nan() {
                f32::from_bits(0x7fc0_0000)
            } else {
                x as f32
            };
            f.to_ne_bytes().to_vec()
        }
        _ => {
            let f = if x.is_nan() {
                f64::from_bits(0x7ff8_0000_0000_0000)
            } else {
                x
            };
            f.to_ne_bytes().to_vec()
        }
    }
}

#[cfg(test)]
mod tests;
