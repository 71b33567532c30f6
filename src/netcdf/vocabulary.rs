//! The netCDF classic vocabulary, once for both directions: the external
//! types (their code, size, CDL name and default fill), the Zarr type of
//! each either way, and the attribute mapping either way (a classic
//! attribute's values as JSON, JSON as a classic attribute's values).
//! The `.nc` writer (`mod.rs`), the classic parser (`classic.rs`), the
//! group writer of a classic file (`write/group.rs`) and CDL's type names
//! (`cdl/types.rs`) all read it here.
//!
//! Invariants: every value is big-endian, as the classic formats store
//! it; a value that does not fit the type asked for is `None`, never
//! wrapped; a type code outside the formats is `None`.

use crate::json::Value;
use crate::zarr::data_type::DataType;

/// The external types of the classic formats (CDF-5 adds the unsigned and
/// 64-bit integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
    /// `byte`: int8.
    Byte,
    /// `char`: one byte of text.
    Char,
    /// `short`: int16.
    Short,
    /// `int`: int32.
    Int,
    /// `float`: float32.
    Float,
    /// `double`: float64.
    Double,
    /// `ubyte` (CDF-5).
    UByte,
    /// `ushort` (CDF-5).
    UShort,
    /// `uint` (CDF-5).
    UInt,
    /// `int64` (CDF-5).
    Int64,
    /// `uint64` (CDF-5).
    UInt64,
}

/// Every type, in code order (the code is the index plus 1).
const ALL: [NcType; 11] = [
    NcType::Byte,
    NcType::Char,
    NcType::Short,
    NcType::Int,
    NcType::Float,
    NcType::Double,
    NcType::UByte,
    NcType::UShort,
    NcType::UInt,
    NcType::Int64,
    NcType::UInt64,
];

impl NcType {
    /// The type of `code` (`NC_BYTE` = 1 … `NC_UINT64` = 11).
    pub fn of(code: u32) -> Option<NcType> {
        ALL.get(usize::try_from(code).ok()?.checked_sub(1)?).copied()
    }

    /// Its code in a header.
    pub fn code(self) -> u32 {
        ALL.iter().position(|&t| t == self).expect("every type is listed") as u32 + 1
    }

    /// Whether only CDF-5 has it.
    pub fn cdf5_only(self) -> bool {
        self.code() > 6
    }

    /// Bytes per value.
    pub fn size(self) -> u64 {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::UInt | NcType::Float => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    /// The CDL name.
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        }
    }

    /// netCDF's default fill value (`NC_FILL_BYTE` …), big-endian: what a
    /// reader takes as missing where a variable has no `_FillValue`.
    pub fn default_fill(self) -> Vec<u8> {
        match self {
            NcType::Byte => (-127i8).to_be_bytes().to_vec(),
            NcType::Char => vec![0],
            NcType::Short => (-32767i16).to_be_bytes().to_vec(),
            NcType::Int => (-2147483647i32).to_be_bytes().to_vec(),
            NcType::Float => f32::from_bits(0x7cf0_0000).to_be_bytes().to_vec(),
            NcType::Double => f64::from_bits(0x479e_0000_0000_0000).to_be_bytes().to_vec(),
            NcType::UByte => vec![255],
            NcType::UShort => 65535u16.to_be_bytes().to_vec(),
            NcType::UInt => 4294967295u32.to_be_bytes().to_vec(),
            NcType::Int64 => (-9223372036854775806i64).to_be_bytes().to_vec(),
            NcType::UInt64 => 18446744073709551614u64.to_be_bytes().to_vec(),
        }
    }

    /// The Zarr v3 data type a variable of this type becomes (`None`:
    /// `char`, whose Zarr type is its strings' length).
    pub fn zarr(self) -> Option<&'static str> {
        Some(match self {
            NcType::Byte => "int8",
            NcType::Char => return None,
            NcType::Short => "int16",
            NcType::Int => "int32",
            NcType::Float => "float32",
            NcType::Double => "float64",
            NcType::UByte => "uint8",
            NcType::UShort => "uint16",
            NcType::UInt => "uint32",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        })
    }

    /// The type a Zarr array of `dt` is written as (`cdf5`: in CDF-5,
    /// else CDF-2), and whether it is unsigned in a signed type (CDF-2's
    /// `_Unsigned = "true"`); `None` where no classic type holds it.
    pub fn of_zarr(dt: &DataType, cdf5: bool) -> Option<(NcType, bool)> {
        Some(match dt {
            DataType::Bool => (if cdf5 { NcType::UByte } else { NcType::Byte }, false),
            DataType::Int8 => (NcType::Byte, false),
            DataType::Int16 => (NcType::Short, false),
            DataType::Int32 => (NcType::Int, false),
            DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => (NcType::Int64, false),
            DataType::UInt8 if cdf5 => (NcType::UByte, false),
            DataType::UInt8 => (NcType::Byte, true),
            DataType::UInt16 if cdf5 => (NcType::UShort, false),
            DataType::UInt16 => (NcType::Short, true),
            DataType::UInt32 if cdf5 => (NcType::UInt, false),
            DataType::UInt32 => (NcType::Int, true),
            DataType::UInt64 => (NcType::UInt64, false),
            DataType::Float16 | DataType::BFloat16 | DataType::Float32 | DataType::Complex64 => (NcType::Float, false),
            DataType::Float64 | DataType::Complex128 => (NcType::Double, false),
            DataType::FixedBytes(_) | DataType::FixedUtf32(_) => (NcType::Char, false),
            DataType::Raw(_) | DataType::String | DataType::Bytes | DataType::Struct(_) => return None,
            DataType::Narrow(n) => return NcType::of_zarr(&n.shown(), cdf5),
        })
    }

    /// One value `v` (a number, or a Zarr fill value's string) as this
    /// type's big-endian bytes, if it fits. An integer type takes the
    /// signed and the unsigned range of its width (CDF-2 keeps unsigned
    /// values in the signed type).
    pub fn encode(self, v: &Value) -> Option<Vec<u8>> {
        let n = crate::zarr::data_type::fill_value_number(v).ok()?;
        let x = n.as_f64();
        let int = |lo: i128, hi: i128| n.integral().filter(|i| (lo..=hi).contains(i));
        Some(match self {
            NcType::Byte => vec![int(-128, 255)? as u8],
            NcType::UByte => vec![int(0, 255)? as u8],
            NcType::Short => (int(-32768, 65535)? as u16).to_be_bytes().to_vec(),
            NcType::UShort => (int(0, 65535)? as u16).to_be_bytes().to_vec(),
            NcType::Int => (int(-2147483648, 4294967295)? as u32).to_be_bytes().to_vec(),
            NcType::UInt => (int(0, 4294967295)? as u32).to_be_bytes().to_vec(),
            NcType::Int64 => (int(i64::MIN.into(), i64::MAX.into())? as i64).to_be_bytes().to_vec(),
            NcType::UInt64 => (int(0, u64::MAX.into())? as u64).to_be_bytes().to_vec(),
            NcType::Float => (x as f32).to_be_bytes().to_vec(),
            NcType::Double => x.to_be_bytes().to_vec(),
            NcType::Char => return None,
        })
    }

    /// `v` (one number or a non-empty list) as big-endian values of this
    /// type, if every value fits.
    pub fn encode_all(self, v: &Value) -> Option<Vec<u8>> {
        let items = match v {
            Value::Array(items) if !items.is_empty() => items.as_slice(),
            Value::Array(_) => return None,
            one => std::slice::from_ref(one),
        };
        let mut bytes = Vec::new();
        for i in items {
            bytes.extend(self.encode(i)?);
        }
        Some(bytes)
    }

    /// One big-endian value `b` (at least [`NcType::size`] bytes) as JSON
    /// (`fill`: as a Zarr `fill_value`, whose non-finite floats are
    /// strings). A `float` is written with the fewest digits that give
    /// the same `float` back.
    pub fn decode(self, b: &[u8], fill: bool) -> Value {
        let float = |x: f64| match (fill, x.is_finite()) {
            (true, false) if x.is_nan() => Value::Str("NaN".into()),
            (true, false) => Value::Str(if x > 0.0 { "Infinity" } else { "-Infinity" }.into()),
            _ => Value::Float(x),
        };
        let eight = |b: &[u8]| -> [u8; 8] { b[..8].try_into().expect("8 bytes") };
        match self {
            NcType::Byte => Value::Int(i64::from(b[0] as i8)),
            NcType::Char | NcType::UByte => Value::Int(i64::from(b[0])),
            NcType::Short => Value::Int(i64::from(i16::from_be_bytes([b[0], b[1]]))),
            NcType::UShort => Value::Int(i64::from(u16::from_be_bytes([b[0], b[1]]))),
            NcType::Int => Value::Int(i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
            NcType::UInt => Value::Int(i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
            NcType::Float => {
                let x = f32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                float(format!("{x:?}").parse::<f64>().unwrap_or(f64::from(x)))
            }
            NcType::Double => float(f64::from_be_bytes(eight(b))),
            NcType::Int64 => Value::Int(i64::from_be_bytes(eight(b))),
            NcType::UInt64 => {
                let u = u64::from_be_bytes(eight(b));
                i64::try_from(u).map_or(Value::UInt(u), Value::Int)
            }
        }
    }
}

/// A classic attribute's values (`raw`, big-endian, of type `t`) as JSON:
/// text as a string (its trailing NULs dropped), one number as a number,
/// several as an array (NZ-1.0's mapping).
pub fn attribute_json(t: NcType, raw: &[u8]) -> Value {
    if t == NcType::Char {
        let text = raw.strip_suffix(&[0]).unwrap_or(raw);
        let end = text.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        return Value::Str(String::from_utf8_lossy(&text[..end]).into_owned());
    }
    let mut values: Vec<Value> = raw
        .chunks_exact(t.size() as usize)
        .map(|b| t.decode(b, false))
        .collect();
    match values.len() {
        1 => values.remove(0),
        _ => Value::Array(values),
    }
}

/// A JSON attribute value as a classic attribute is written.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// `char`: text.
    Text(String),
    /// Integers (`int`, or `int64` in CDF-5; doubles where neither holds
    /// them).
    Ints(Vec<i64>),
    /// `double`s.
    Doubles(Vec<f64>),
    /// Values already encoded in a type (a `_FillValue`, a recorded type).
    Typed(NcType, Vec<u8>),
}

impl AttrValue {
    /// NZ-1.0's default mapping of a JSON value: a string is text, integers
    /// are integers, numbers are doubles, and anything else is its JSON
    /// text.
    pub fn of_json(v: &Value) -> AttrValue {
        match v {
            Value::Str(s) => AttrValue::Text(s.clone()),
            Value::Int(i) => AttrValue::Ints(vec![*i]),
            Value::Float(f) => AttrValue::Doubles(vec![*f]),
            Value::Array(items) if !items.is_empty() && items.iter().all(|i| matches!(i, Value::Int(_))) => {
                AttrValue::Ints(
                    items
                        .iter()
                        .filter_map(|i| if let Value::Int(x) = i { Some(*x) } else { None })
                        .collect(),
                )
            }
            Value::Array(items)
                if !items.is_empty() && items.iter().all(|i| matches!(i, Value::Int(_) | Value::Float(_))) =>
            {
                AttrValue::Doubles(items.iter().filter_map(Value::as_f64).collect())
            }
            other => AttrValue::Text(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_sizes_and_names_are_netcdf_cs() {
        // netcdf.h: NC_BYTE 1 … NC_UINT64 11; ncdump's type names.
        let names = [
            "byte", "char", "short", "int", "float", "double", "ubyte", "ushort", "uint", "int64", "uint64",
        ];
        let sizes = [1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8];
        for (code, (name, size)) in (1u32..).zip(names.iter().zip(sizes)) {
            let t = NcType::of(code).unwrap();
            assert_eq!((t.code(), t.name(), t.size()), (code, *name, size));
            assert_eq!(t.cdf5_only(), code > 6);
            assert_eq!(t.default_fill().len() as u64, size);
        }
        assert_eq!(NcType::of(0), None);
        assert_eq!(NcType::of(12), None);
    }

    #[test]
    fn each_type_is_its_zarr_type_both_ways() {
        for t in ALL.into_iter().filter(|&t| t != NcType::Char) {
            let dt = DataType::from_json(&Value::Str(t.zarr().unwrap().into())).unwrap();
            assert_eq!(NcType::of_zarr(&dt, true), Some((t, false)), "{t:?}");
            // A value of the type comes back as itself.
            let fill = t.default_fill();
            assert_eq!(t.encode(&t.decode(&fill, true)), Some(fill), "{t:?}");
        }
        assert_eq!(NcType::of_zarr(&DataType::UInt16, false), Some((NcType::Short, true)));
        assert_eq!(NcType::Byte.encode(&Value::Int(256)), None);
    }

    #[test]
    fn attributes_map_both_ways() {
        assert_eq!(attribute_json(NcType::Char, b"K\0\0"), Value::Str("K".into()));
        let raw = [(-1i16).to_be_bytes(), 7i16.to_be_bytes()].concat();
        let json = attribute_json(NcType::Short, &raw);
        assert_eq!(json, Value::Array(vec![Value::Int(-1), Value::Int(7)]));
        assert_eq!(NcType::Short.encode_all(&json), Some(raw));
        assert_eq!(AttrValue::of_json(&json), AttrValue::Ints(vec![-1, 7]));
        assert_eq!(AttrValue::of_json(&Value::Float(0.5)), AttrValue::Doubles(vec![0.5]));
    }
}
