//! numpy type strings (`"<i4"`, `"|b1"`, `"<M8[10s]"`, `"|S6"`), as Zarr v2
//! `dtype` and numcodecs filter configurations spell them.
//!
//! [`parse_dtype`] maps an array's dtype to a [`DataType`] and the byte order
//! its chunks are stored in; [`NumType`] is the plain numeric subset
//! numcodecs filters compute with. numpy's `str()` names (`"int32"`,
//! `"float64"`, `"bool"`), which zarr-python writes into some codec
//! configurations, are accepted too. [`parse_record`] reads a record list
//! (`[["a", "<u2"], ["b", ">f4", [2]]]`), each field keeping the byte
//! order its type string names.

use std::sync::Arc;

use super::data_type::record::{self, Record, bad};
use super::data_type::{DataType, TimeUnit};
use super::extension::MetadataError;
use crate::json::Value;

/// Why a numpy type string is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DtypeError {
    /// Not of the form byte order, code, size.
    #[error("`{0}` is not a numpy type string")]
    NotATypeString(String),
    /// No type code after the byte order.
    #[error("`{0}` has no type code")]
    NoTypeCode(String),
    /// A size that is not a number the code allows.
    #[error("`{0}` has no valid size")]
    BadSize(String),
    /// A datetime or timedelta without `[unit]`.
    #[error("`{0}` is not a datetime type with a unit")]
    NoUnit(String),
    /// A datetime unit's scale that is not a positive number.
    #[error("`{0}` has a bad scale")]
    BadScale(String),
    /// A datetime unit numpy does not have.
    #[error("`{0}` has an unknown time unit")]
    UnknownUnit(String),
    /// `|O` with no codec that says what the objects are.
    #[error("object dtype `|O` without a vlen-utf8 or vlen-bytes codec")]
    Object,
    /// A type code nzfs does not read.
    #[error("unsupported numpy type `{0}`")]
    Unsupported(String),
    /// A type where a numeric one is needed (a numcodecs filter's `dtype`).
    #[error("{text} ({name}) is not a numeric type")]
    NotNumeric {
        /// The type string.
        text: String,
        /// What it is instead.
        name: String,
    },
}

/// The kind of a numeric numpy type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumKind {
    /// `b1`.
    Bool,
    /// `i`.
    Int,
    /// `u`.
    UInt,
    /// `f`.
    Float,
}

/// A numeric numpy type with its byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumType {
    /// Which kind of number.
    pub kind: NumKind,
    /// Bytes per element.
    pub size: usize,
    /// Big-endian.
    pub big: bool,
}

impl NumType {
    /// `|u1`.
    pub const U8: NumType = NumType {
        kind: NumKind::UInt,
        size: 1,
        big: false,
    };

    /// The numeric type of a data type's elements in native byte order, if
    /// it has one.
    pub fn native(dt: &DataType) -> Option<NumType> {
        let kind = match dt {
            DataType::Bool => NumKind::Bool,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => NumKind::Int,
            DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => NumKind::Int,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => NumKind::UInt,
            DataType::Float16 | DataType::Float32 | DataType::Float64 => NumKind::Float,
            _ => return None,
        };
        Some(NumType {
            kind,
            size: dt.size(),
            big: cfg!(target_endian = "big"),
        })
    }

    /// Parse a numeric type string.
    pub fn parse(s: &str) -> Result<NumType, DtypeError> {
        let (dt, big) = parse_dtype(s)?;
        let native = Self::native(&dt).ok_or_else(|| DtypeError::NotNumeric {
            text: s.to_string(),
            name: dt.name(),
        })?;
        Ok(NumType { big, ..native })
    }

    /// The Zarr data type with these values (byte order aside).
    pub fn data_type(self) -> DataType {
        match (self.kind, self.size) {
            (NumKind::Bool, _) => DataType::Bool,
            (NumKind::Int, 1) => DataType::Int8,
            (NumKind::Int, 2) => DataType::Int16,
            (NumKind::Int, 4) => DataType::Int32,
            (NumKind::Int, _) => DataType::Int64,
            (NumKind::UInt, 1) => DataType::UInt8,
            (NumKind::UInt, 2) => DataType::UInt16,
            (NumKind::UInt, 4) => DataType::UInt32,
            (NumKind::UInt, _) => DataType::UInt64,
            (NumKind::Float, 2) => DataType::Float16,
            (NumKind::Float, 4) => DataType::Float32,
            (NumKind::Float, _) => DataType::Float64,
        }
    }
}

/// `(big_endian, characters)` of a `<U n` / `>U n` type string.
pub fn utf32_width(s: &str) -> Option<(bool, usize)> {
    match parse_dtype(s) {
        Ok((DataType::FixedUtf32(n), big)) => Some((big, n)),
        _ => None,
    }
}

/// Parse a numpy type string into a data type and whether its stored bytes
/// are big-endian. `|O` (objects) and structured types are refused with a
/// reason; the caller decides what an object array holds.
pub fn parse_dtype(s: &str) -> Result<(DataType, bool), DtypeError> {
    let named = match s {
        "bool" => Some(DataType::Bool),
        "int8" => Some(DataType::Int8),
        "int16" => Some(DataType::Int16),
        "int32" => Some(DataType::Int32),
        "int64" => Some(DataType::Int64),
        "uint8" => Some(DataType::UInt8),
        "uint16" => Some(DataType::UInt16),
        "uint32" => Some(DataType::UInt32),
        "uint64" => Some(DataType::UInt64),
        "float16" => Some(DataType::Float16),
        "float32" => Some(DataType::Float32),
        "float64" => Some(DataType::Float64),
        "complex64" => Some(DataType::Complex64),
        "complex128" => Some(DataType::Complex128),
        _ => None,
    };
    if let Some(dt) = named {
        return Ok((dt, cfg!(target_endian = "big")));
    }
    let mut chars = s.chars();
    let big = match chars.next() {
        Some('<') | Some('|') | Some('=') => false,
        Some('>') => true,
        _ => return Err(DtypeError::NotATypeString(s.to_string())),
    };
    let rest = chars.as_str();
    let kind = rest
        .chars()
        .next()
        .ok_or_else(|| DtypeError::NoTypeCode(s.to_string()))?;
    let spec = &rest[kind.len_utf8()..];
    let size = || -> Result<usize, DtypeError> {
        spec.parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n <= 1 << 20)
            .ok_or_else(|| DtypeError::BadSize(s.to_string()))
    };
    let dt = match (kind, spec) {
        ('b', "1") => DataType::Bool,
        ('i', "1") => DataType::Int8,
        ('i', "2") => DataType::Int16,
        ('i', "4") => DataType::Int32,
        ('i', "8") => DataType::Int64,
        ('u', "1") => DataType::UInt8,
        ('u', "2") => DataType::UInt16,
        ('u', "4") => DataType::UInt32,
        ('u', "8") => DataType::UInt64,
        ('f', "2") => DataType::Float16,
        ('f', "4") => DataType::Float32,
        ('f', "8") => DataType::Float64,
        ('c', "8") => DataType::Complex64,
        ('c', "16") => DataType::Complex128,
        ('S', _) => DataType::FixedBytes(size()?),
        ('U', _) => DataType::FixedUtf32(size()?),
        ('V', _) => DataType::Raw(size()?),
        ('M' | 'm', _) => {
            let unit = spec
                .strip_prefix("8[")
                .and_then(|u| u.strip_suffix(']'))
                .ok_or_else(|| DtypeError::NoUnit(s.to_string()))?;
            let digits = unit.len() - unit.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let scale = if digits == 0 {
                1
            } else {
                unit[..digits]
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| DtypeError::BadScale(s.to_string()))?
            };
            let unit = TimeUnit::parse(&unit[digits..]).ok_or_else(|| DtypeError::UnknownUnit(s.to_string()))?;
            if kind == 'M' {
                DataType::DateTime64 { unit, scale }
            } else {
                DataType::TimeDelta64 { unit, scale }
            }
        }
        ('O', _) => return Err(DtypeError::Object),
        _ => return Err(DtypeError::Unsupported(s.to_string())),
    };
    // Single bytes have no order; `|` on a wider type means native.
    let big = big && dt.swap_unit() > 1;
    Ok((dt, big))
}

/// A Zarr v2 `dtype` list: `[name, type]` or `[name, type, shape]`,
/// where a type is a numpy type string or a nested list.
pub fn parse_record(list: &[Value], depth: usize) -> Result<Record, MetadataError> {
    Record::build(list, depth, |f| {
        let item = f.as_array().unwrap_or_default();
        let (Some(name), Some(dt)) = (item.first().and_then(Value::as_str), item.get(1)) else {
            return Err(bad(format!("a field is not [name, type] or [name, type, shape]: {f}")));
        };
        let (dt, big) = match dt {
            Value::Str(s) if s.ends_with('O') => {
                return Err(bad(format!(
                    "field `{name}` is an object: a variable-length type, which records cannot hold"
                )));
            }
            Value::Str(s) => parse_dtype(s).map_err(|e| bad(e.to_string()))?,
            Value::Array(inner) => (DataType::Struct(Arc::new(parse_record(inner, depth + 1)?)), false),
            other => return Err(bad(format!("field `{name}` has type {other}"))),
        };
        let shape = match item.get(2) {
            None => Vec::new(),
            Some(Value::Array(dims)) => dims
                .iter()
                .map(|d| {
                    d.as_u64()
                        .and_then(|d| usize::try_from(d).ok())
                        .filter(|&d| d > 0 && d <= record::MAX_SIZE)
                })
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| bad(format!("field `{name}` has shape {}", item[2])))?,
            Some(Value::Int(d)) if *d > 0 && (*d as u64) <= record::MAX_SIZE as u64 => vec![*d as usize],
            Some(other) => return Err(bad(format!("field `{name}` has shape {other}"))),
        };
        if item.len() > 3 {
            return Err(bad(format!("field `{name}` has more than [name, type, shape]")));
        }
        let big = (dt.swap_unit() > 1).then_some(big);
        Ok((name.to_string(), dt, shape, big))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings() {
        assert_eq!(parse_dtype("<i4").unwrap(), (DataType::Int32, false));
        assert_eq!(parse_dtype(">f8").unwrap(), (DataType::Float64, true));
        assert_eq!(parse_dtype("|b1").unwrap(), (DataType::Bool, false));
        assert_eq!(parse_dtype(">u1").unwrap(), (DataType::UInt8, false));
        assert_eq!(parse_dtype(">c8").unwrap(), (DataType::Complex64, true));
        assert_eq!(parse_dtype("|S6").unwrap(), (DataType::FixedBytes(6), false));
        assert_eq!(parse_dtype(">U3").unwrap(), (DataType::FixedUtf32(3), true));
        assert_eq!(parse_dtype("|V8").unwrap(), (DataType::Raw(8), false));
        assert_eq!(
            parse_dtype("<M8[10s]").unwrap(),
            (
                DataType::DateTime64 {
                    unit: TimeUnit::Second,
                    scale: 10
                },
                false
            )
        );
        assert_eq!(
            parse_dtype(">m8[ns]").unwrap().0,
            DataType::TimeDelta64 {
                unit: TimeUnit::Nanosecond,
                scale: 1
            }
        );
        for bad in ["", "i4", "<i3", "<M8", "<M8[fortnight]", "|O", "<U0", "[('a', '<i4')]"] {
            assert!(parse_dtype(bad).is_err(), "{bad}");
        }
        assert_eq!(NumType::parse("float32").unwrap().size, 4);
        assert!(NumType::parse("|S2").is_err());
    }

    fn v2(text: &str) -> Result<Record, MetadataError> {
        let v = crate::json::parse(text.as_bytes()).unwrap();
        parse_record(v.as_array().unwrap(), 0)
    }

    #[test]
    fn numpy_lists_lay_fields_out_packed() {
        let r = v2(r#"[["a", "<u2"], ["b", ">f4"], ["c", "<i4", [2]], ["p", [["x", "|u1"], ["y", ">i2"]]]]"#).unwrap();
        assert_eq!(r.size(), 2 + 4 + 8 + 3);
        let offsets: Vec<usize> = r.fields.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [0, 2, 6, 14]);
        assert_eq!(r.fields[2].count(), 2);
        assert_eq!(
            r.describe(),
            "{a: uint16, b: float32, c: int32[2], p: struct {x: uint8, y: int16}}"
        );
        assert_eq!(
            r.layout(),
            "{a: uint16 @ 0, b: float32 @ 2, c: int32[2] @ 6, p: {x: uint8 @ 0, y: int16 @ 1} @ 14}"
        );
        // Each value into the host's order, by its own type string.
        let mut rec = Vec::new();
        rec.extend(7u16.to_le_bytes());
        rec.extend(1.5f32.to_be_bytes());
        rec.extend(3i32.to_le_bytes());
        rec.extend((-4i32).to_le_bytes());
        rec.push(9);
        rec.extend((-2i16).to_be_bytes());
        let mut two = [rec.clone(), rec].concat();
        r.to_native(&mut two, true);
        let mut want = Vec::new();
        want.extend(7u16.to_ne_bytes());
        want.extend(1.5f32.to_ne_bytes());
        want.extend(3i32.to_ne_bytes());
        want.extend((-4i32).to_ne_bytes());
        want.push(9);
        want.extend((-2i16).to_ne_bytes());
        assert_eq!(two, [want.clone(), want].concat());
    }

    #[test]
    fn hostile_record_lists_are_refused() {
        for bad in [
            r#"[]"#,
            r#"[["a", "<i4"], ["a", "<i4"]]"#,
            r#"[["", "<i4"]]"#,
            r#"[["s", "|O"]]"#,
            r#"[["a", "<i4", [0]]]"#,
            r#"[["a", "<i4", [1048576, 1048576]]]"#,
            r#"[["a", "|V1048576"], ["b", "|u1"]]"#,
            r#"[["a", "<i4", [2], 1]]"#,
            r#"[["a"]]"#,
            r#"[5]"#,
        ] {
            assert!(v2(bad).is_err(), "{bad}");
        }
        let mut deep = r#"["z", "<i4"]"#.to_string();
        for _ in 0..record::MAX_DEPTH {
            deep = format!(r#"["n", [{deep}]]"#);
        }
        assert!(v2(&format!("[{deep}]")).is_err());
        // Nested runs multiply: 100 x 100 values of a 2-field record.
        let wide = r#"[["o", [["m", [["a", "<i2"], ["b", "<i4"]], [100]]], [100]]]"#;
        assert!(v2(wide).is_err());
    }
}
