//! Records: the `struct` data type (zarr-extensions `struct`, its legacy
//! alias `structured`) and Zarr v2's numpy record lists
//! (`[["a", "<u2"], ["b", ">f4", [2]]]`).
//!
//! A [`Record`] is named fields packed in declaration order with no padding
//! (numpy's default layout, the only one the spec allows). A field is any
//! fixed-size type, a nested record, or (v2 only) a subarray of one.
//! Decoded records are in the host's byte order, field by field: each leaf
//! is stored in its own order when its type string names one (v2 `>i4`),
//! otherwise in the `bytes` codec's order (little when it names none, as
//! the legacy `structured` type says).
//!
//! Invariants, checked when parsed (the metadata is untrusted): 1 to
//! [`MAX_FIELDS`] fields per record with unique non-empty names, nesting at
//! most [`MAX_DEPTH`], at most [`MAX_LEAVES`] byte-order runs in all, and
//! a record of 1 byte to 1 MiB. Nothing is allocated by a size the
//! document states before that size is checked.

use base64::Engine;

use super::{DataType, FillValue};
use crate::json::Value;
use crate::zarr::extension::MetadataError;

/// Most fields in one record (nested records count their own).
pub const MAX_FIELDS: usize = 1024;
/// Deepest nesting of records in records.
pub const MAX_DEPTH: usize = 8;
/// Most byte-order runs a record flattens to.
pub const MAX_LEAVES: usize = 4096;
/// Largest record, in bytes (as for the raw types).
pub const MAX_SIZE: usize = 1 << 20;

/// A record type: its fields and packed size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its fields, in record order.
    pub fields: Vec<Field>,
    size: usize,
    leaves: Vec<Leaf>,
}

/// One named member of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its element type (itself a record for a nested one).
    pub data_type: DataType,
    /// A numpy subarray's shape (`("c", "<i4", (2,))`); empty for one value.
    pub shape: Vec<usize>,
    /// Bytes from the start of the record.
    pub offset: usize,
    /// The stored byte order its own type string fixes (Zarr v2), or
    /// `None` when it follows the `bytes` codec (or has no order).
    pub big: Option<bool>,
}

impl Field {
    /// Values in the field (the subarray's size, 1 for a scalar field).
    pub fn count(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A run of `count` values of `unit` bytes each that byte order applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leaf {
    offset: usize,
    unit: usize,
    count: usize,
    big: Option<bool>,
}

/// The error refusing a record type, for `reason`.
pub(crate) fn bad(reason: impl Into<String>) -> MetadataError {
    MetadataError::UnknownDataType(format!("struct: {}", reason.into()))
}

impl Record {
    /// The `configuration` of a v3 `struct` or `structured` data type:
    /// `fields` as `{"name", "data_type"}` objects or legacy `[name, type]`
    /// pairs.
    pub(super) fn from_v3(config: Option<&Value>, depth: usize) -> Result<Record, MetadataError> {
        let fields = config
            .and_then(|c| c.get("fields"))
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no `fields` list in its configuration"))?;
        Record::build(fields, depth, |f| {
            let (name, dt) = match f {
                Value::Array(pair) if pair.len() == 2 => (pair[0].as_str(), &pair[1]),
                Value::Object(_) => (
                    f.get("name").and_then(Value::as_str),
                    f.get("data_type").unwrap_or(&Value::Null),
                ),
                _ => {
                    return Err(bad(format!(
                        "a field is neither an object nor a [name, type] pair: {f}"
                    )));
                }
            };
            let name = name.ok_or_else(|| bad(format!("a field has no string name: {f}")))?;
            Ok((name.to_string(), DataType::parse_at(dt, depth + 1)?, Vec::new(), None))
        })
    }

    /// Lay the fields out, checking every bound before it is used: `field`
    /// gives each item's name, type, subarray shape and own byte order.
    pub(crate) fn build(
        items: &[Value],
        depth: usize,
        field: impl Fn(&Value) -> Result<(String, DataType, Vec<usize>, Option<bool>), MetadataError>,
    ) -> Result<Record, MetadataError> {
        if depth >= MAX_DEPTH {
            return Err(bad(format!("records nested more than {MAX_DEPTH} deep")));
        }
        if items.is_empty() || items.len() > MAX_FIELDS {
            return Err(bad(format!("{} fields (1 to {MAX_FIELDS} allowed)", items.len())));
        }
        let mut fields: Vec<Field> = Vec::with_capacity(items.len());
        let mut leaves = Vec::new();
        let mut offset = 0usize;
        for item in items {
            let (name, data_type, shape, big) = field(item)?;
            if name.is_empty() || fields.iter().any(|f| f.name == name) {
                return Err(bad(format!("field name `{name}` is empty or repeated")));
            }
            if let DataType::Narrow(n) = data_type {
                return Err(bad(format!(
                    "field `{name}` has the type {}, which nzfs widens only as a whole array",
                    n.name()
                )));
            }
            // A record holds each value as stored (bfloat16: 2 bytes).
            let stored = data_type.storage();
            let Some(item_size) = stored.element_size() else {
                return Err(bad(format!(
                    "field `{name}` has the variable-length type {}",
                    data_type.name()
                )));
            };
            let count = shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .filter(|&n| n <= MAX_SIZE)
                .ok_or_else(|| bad(format!("field `{name}` has too many values")))?;
            let end = item_size
                .checked_mul(count)
                .and_then(|s| s.checked_add(offset))
                .filter(|&e| e <= MAX_SIZE)
                .ok_or_else(|| bad(format!("records larger than {MAX_SIZE} bytes")))?;
            match &data_type {
                DataType::Struct(inner) => {
                    if leaves.len() + inner.leaves.len().saturating_mul(count) > MAX_LEAVES {
                        return Err(bad(format!("more than {MAX_LEAVES} byte-order runs")));
                    }
                    for k in 0..count {
                        leaves.extend(inner.leaves.iter().map(|l| Leaf {
                            offset: offset + k * item_size + l.offset,
                            ..l.clone()
                        }));
                    }
                }
                _ if stored.swap_unit() > 1 => {
                    if leaves.len() >= MAX_LEAVES {
                        return Err(bad(format!("more than {MAX_LEAVES} byte-order runs")));
                    }
                    leaves.push(Leaf {
                        offset,
                        unit: stored.swap_unit(),
                        count: count * item_size / stored.swap_unit(),
                        big,
                    });
                }
                _ => {}
            }
            fields.push(Field {
                name,
                data_type,
                shape,
                offset,
                big,
            });
            offset = end;
        }
        if offset == 0 {
            return Err(bad("records of no bytes"));
        }
        Ok(Record {
            fields,
            size: offset,
            leaves,
        })
    }

    /// Bytes per record.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether any value in the record has a byte order.
    pub fn has_order(&self) -> bool {
        !self.leaves.is_empty()
    }

    /// Whether some value's order comes from the `bytes` codec.
    pub fn follows_codec(&self) -> bool {
        self.leaves.iter().any(|l| l.big.is_none())
    }

    /// Bring packed records into the host's byte order: a leaf is stored in
    /// its own order, or `codec_big`'s.
    pub fn to_native(&self, buffer: &mut [u8], codec_big: bool) {
        let host_big = cfg!(target_endian = "big");
        let swaps: Vec<&Leaf> = self
            .leaves
            .iter()
            .filter(|l| l.big.unwrap_or(codec_big) != host_big)
            .collect();
        if swaps.is_empty() {
            return;
        }
        for record in buffer.chunks_exact_mut(self.size) {
            for l in &swaps {
                let run = &mut record[l.offset..l.offset + l.unit * l.count];
                run.chunks_exact_mut(l.unit).for_each(<[u8]>::reverse);
            }
        }
    }

    /// numpy's spelling, for messages: `{a: uint16, b: float32[2]}`.
    pub fn describe(&self) -> String {
        self.listed(false)
    }

    /// [`Record::describe`] with each field's byte offset in its record:
    /// `{a: uint16 @ 0, p: {x: float32 @ 0} @ 2}`.
    pub fn layout(&self) -> String {
        self.listed(true)
    }

    fn listed(&self, offsets: bool) -> String {
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|f| {
                let mut text = format!("{}: ", f.name);
                match &f.data_type {
                    DataType::Struct(inner) if offsets => text.push_str(&inner.listed(true)),
                    other => text.push_str(&other.name()),
                }
                if !f.shape.is_empty() {
                    let dims: Vec<String> = f.shape.iter().map(usize::to_string).collect();
                    text.push_str(&format!("[{}]", dims.join(", ")));
                }
                if offsets {
                    text.push_str(&format!(" @ {}", f.offset));
                }
                text
            })
            .collect();
        format!("{{{}}}", fields.join(", "))
    }

    /// One record from a fill value: an object of per-field fills, or
    /// base64 of the packed record (each value in its own order, else
    /// little-endian); `0` and `null` are all zero bytes, as zarr 2.x read
    /// them.
    pub fn fill_value(&self, v: &Value) -> Option<FillValue> {
        match v {
            Value::Null | Value::Int(0) | Value::UInt(0) => Some(FillValue(vec![0; self.size])),
            Value::Str(b64) => {
                let mut bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
                if bytes.len() != self.size {
                    return None;
                }
                self.to_native(&mut bytes, false);
                Some(FillValue(bytes))
            }
            Value::Object(members) => {
                let mut out = vec![0u8; self.size];
                for f in &self.fields {
                    let (_, fv) = members.iter().find(|(k, _)| *k == f.name)?;
                    let mut one = f.data_type.fill_value(fv).ok()?.0;
                    // A bfloat16 fill comes widened to float32; a record
                    // holds its top 16 bits.
                    if f.data_type == DataType::BFloat16 {
                        let bits = u32::from_ne_bytes(one.as_slice().try_into().ok()?) >> 16;
                        one = (bits as u16).to_ne_bytes().to_vec();
                    }
                    if one.len() != f.data_type.storage().size() {
                        return None;
                    }
                    let at = out.get_mut(f.offset..f.offset + one.len() * f.count())?;
                    at.copy_from_slice(&one.repeat(f.count()));
                }
                Some(FillValue(out))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn v3_fields_in_both_spellings_and_their_fills() {
        let modern = parse(
            br#"{"fields": [{"name": "x", "data_type": "float32"}, {"name": "t", "data_type": {"name": "struct", "configuration": {"fields": [{"name": "k", "data_type": "int16"}]}}}]}"#,
        )
        .unwrap();
        let r = Record::from_v3(Some(&modern), 0).unwrap();
        assert_eq!(r.size(), 6);
        assert!(r.follows_codec());
        let fill = r.fill_value(&parse(br#"{"x": 1.5, "t": {"k": -3}}"#).unwrap()).unwrap();
        assert_eq!(
            fill.0,
            [1.5f32.to_ne_bytes().as_slice(), &(-3i16).to_ne_bytes()].concat()
        );
        let legacy = parse(br#"{"fields": [["a", "uint16"], ["b", "int8"]]}"#).unwrap();
        let r = Record::from_v3(Some(&legacy), 0).unwrap();
        // Legacy base64 fills are little-endian packed records.
        let fill = r.fill_value(&Value::Str("AQAC".into())).unwrap();
        assert_eq!(fill.0, [1u16.to_ne_bytes().as_slice(), &[2]].concat());
        assert!(r.fill_value(&Value::Str("AQ==".into())).is_none(), "wrong length");
        assert!(
            r.fill_value(&parse(br#"{"a": 1}"#).unwrap()).is_none(),
            "a field missing"
        );
        let halves = parse(br#"{"fields": [["h", "bfloat16"], ["f", "float16"]]}"#).unwrap();
        let r = Record::from_v3(Some(&halves), 0).unwrap();
        let fill = r.fill_value(&parse(br#"{"h": 1.0, "f": 1.0}"#).unwrap()).unwrap();
        assert_eq!(fill.0, [0x3f80u16.to_ne_bytes(), 0x3c00u16.to_ne_bytes()].concat());
    }

    #[test]
    fn hostile_v3_records_are_refused() {
        for bad in [
            r#"{}"#,
            r#"{"fields": []}"#,
            r#"{"fields": [["a", "int8"], ["a", "int8"]]}"#,
            r#"{"fields": [{"name": "s", "data_type": "string"}]}"#,
            r#"{"fields": [{"name": 5, "data_type": "int8"}]}"#,
            r#"{"fields": [["a", "int8", "extra"]]}"#,
            r#"{"fields": [{"name": "r", "data_type": "r8388608"}, {"name": "b", "data_type": "int8"}]}"#,
        ] {
            let config = parse(bad.as_bytes()).unwrap();
            assert!(Record::from_v3(Some(&config), 0).is_err(), "{bad}");
        }
        let mut deep = r#"{"name": "z", "data_type": "int8"}"#.to_string();
        for _ in 0..MAX_DEPTH {
            deep = format!(
                r#"{{"name": "n", "data_type": {{"name": "struct", "configuration": {{"fields": [{deep}]}}}}}}"#
            );
        }
        let config = parse(format!(r#"{{"fields": [{deep}]}}"#).as_bytes()).unwrap();
        assert!(Record::from_v3(Some(&config), 0).is_err());
    }
}
