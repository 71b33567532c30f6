//! A netCDF-4 compound type as the group writer writes it: Zarr's
//! `struct` data type (zarr-extensions), its fields in declared order,
//! packed (no padding), each field of an atomic type or itself a
//! compound; and the repacking of one record from the layout HDF5 stores
//! it in (each field at its offset, padding between) to that.
//!
//! Invariants: a [`Record`] is built only from a type whose every field
//! lies within the file's record (checked by [`Record::of`]), nested at
//! most [`MAX_NESTING`] deep, so [`Record::pack`] never reads past the
//! record it is given; the packed size is the sum of the fields' sizes.

use crate::json::Value;

use super::vocabulary::NcType;

/// Compound types nested at most this deep (netCDF-C sets no bound).
pub const MAX_NESTING: usize = 8;

/// One field of a compound type.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Where it starts in the file's record.
    pub offset: u64,
    /// Its type.
    pub kind: Kind,
}

/// A field's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// One of netCDF's atomic numeric types (not `char` or `string`).
    Atomic(NcType),
    /// A compound type nested in this one.
    Nested(Record),
}

/// A compound type: its fields, and the size of one record in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The fields, in declared order.
    pub fields: Vec<Field>,
    /// One record's bytes as the file stores it (with its padding).
    pub stored: u64,
}

impl Record {
    /// The record of netCDF-4 type `t`, or why it has no `struct` form.
    pub fn of(t: &netcdf_reader::NcType) -> Result<Record, String> {
        Record::nested(t, 0)
    }

    fn nested(t: &netcdf_reader::NcType, depth: usize) -> Result<Record, String> {
        use netcdf_reader::NcType as T;
        let T::Compound { size, fields } = t else {
            return Err(format!("{t:?} is not a compound type"));
        };
        if depth >= MAX_NESTING {
            return Err(format!("compound types nested more than {MAX_NESTING} deep"));
        }
        if fields.is_empty() {
            return Err("a compound type of no fields".into());
        }
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            let kind = match &f.dtype {
                T::Compound { .. } => Kind::Nested(Record::nested(&f.dtype, depth + 1)?),
                other => Kind::Atomic(
                    numeric(other)
                        .ok_or_else(|| format!("field {:?} of type {other:?}, which has no Zarr form", f.name))?,
                ),
            };
            let field = Field {
                name: f.name.clone(),
                offset: f.offset,
                kind,
            };
            if field
                .offset
                .checked_add(field.stored())
                .is_none_or(|end| end > u64::from(*size))
            {
                return Err(format!("field {:?} lies past its record's {size} bytes", f.name));
            }
            out.push(field);
        }
        let mut names = std::collections::HashSet::new();
        if let Some(dup) = out.iter().find(|f| !names.insert(f.name.as_str())) {
            return Err(format!("two fields named {:?}", dup.name));
        }
        Ok(Record {
            fields: out,
            stored: u64::from(*size),
        })
    }

    /// One record's bytes packed.
    pub fn size(&self) -> u64 {
        self.fields.iter().map(Field::size).sum()
    }

    /// The `struct` data type of `zarr.json`.
    pub fn data_type(&self) -> Value {
        let field = |f: &Field| {
            let t = match &f.kind {
                Kind::Atomic(t) => Value::Str(t.zarr().unwrap_or_default().into()),
                Kind::Nested(r) => r.data_type(),
            };
            object(vec![("name", Value::Str(f.name.clone())), ("data_type", t)])
        };
        object(vec![
            ("name", Value::Str("struct".into())),
            (
                "configuration",
                object(vec![("fields", Value::Array(self.fields.iter().map(field).collect()))]),
            ),
        ])
    }

    /// A fill value of every field 0, as the `struct` type spells one.
    pub fn zero_fill(&self) -> Value {
        Value::Object(
            self.fields
                .iter()
                .map(|f| {
                    let v = match &f.kind {
                        Kind::Atomic(_) => Value::Int(0),
                        Kind::Nested(r) => r.zero_fill(),
                    };
                    (f.name.clone(), v)
                })
                .collect(),
        )
    }

    /// Append the record `stored` (as the file holds it, [`Record::stored`]
    /// bytes, fields in this machine's order) to `out`, packed.
    pub fn pack(&self, stored: &[u8], out: &mut Vec<u8>) {
        for f in &self.fields {
            let at = f.offset as usize;
            match &f.kind {
                Kind::Atomic(t) => out.extend_from_slice(&stored[at..at + t.size() as usize]),
                Kind::Nested(r) => r.pack(&stored[at..at + r.stored as usize], out),
            }
        }
    }
}

impl Field {
    fn size(&self) -> u64 {
        match &self.kind {
            Kind::Atomic(t) => t.size(),
            Kind::Nested(r) => r.size(),
        }
    }

    fn stored(&self) -> u64 {
        match &self.kind {
            Kind::Atomic(t) => t.size(),
            Kind::Nested(r) => r.stored,
        }
    }
}

/// netCDF's atomic numeric type of `t` (not `char`, `string` or a
/// user-defined type).
pub fn numeric(t: &netcdf_reader::NcType) -> Option<NcType> {
    use netcdf_reader::NcType as T;
    Some(match t {
        T::Byte => NcType::Byte,
        T::Short => NcType::Short,
        T::Int => NcType::Int,
        T::Float => NcType::Float,
        T::Double => NcType::Double,
        T::UByte => NcType::UByte,
        T::UShort => NcType::UShort,
        T::UInt => NcType::UInt,
        T::Int64 => NcType::Int64,
        T::UInt64 => NcType::UInt64,
        _ => return None,
    })
}

fn object(members: Vec<(&str, Value)>) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netcdf_reader::{NcCompoundField, NcType as T};

    fn compound(size: u32, fields: &[(&str, u64, T)]) -> T {
        T::Compound {
            size,
            fields: fields
                .iter()
                .map(|(n, o, t)| NcCompoundField {
                    name: n.to_string(),
                    offset: *o,
                    dtype: t.clone(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_padded_record_packs_its_fields_in_order() {
        let inner = compound(8, &[("a", 0, T::Short), ("b", 4, T::Int)]);
        let r = Record::of(&compound(
            24,
            &[("x", 0, T::Double), ("i", 8, inner), ("u", 16, T::UByte)],
        ))
        .unwrap();
        assert_eq!(r.size(), 8 + 2 + 4 + 1);
        let mut stored = vec![0xEEu8; 24];
        stored[..8].copy_from_slice(&1.5f64.to_ne_bytes());
        stored[8..10].copy_from_slice(&(-2i16).to_ne_bytes());
        stored[12..16].copy_from_slice(&7i32.to_ne_bytes());
        stored[16] = 9;
        let mut out = Vec::new();
        r.pack(&stored, &mut out);
        let expect = [
            1.5f64.to_ne_bytes().as_slice(),
            &(-2i16).to_ne_bytes(),
            &7i32.to_ne_bytes(),
            &[9],
        ]
        .concat();
        assert_eq!(out, expect);
        assert_eq!(
            r.data_type().to_string(),
            r#"{"name":"struct","configuration":{"fields":[{"name":"x","data_type":"float64"},{"name":"i","data_type":{"name":"struct","configuration":{"fields":[{"name":"a","data_type":"int16"},{"name":"b","data_type":"int32"}]}}},{"name":"u","data_type":"uint8"}]}}"#
        );
    }

    #[test]
    fn what_has_no_struct_form_is_refused_with_why() {
        let no = |t: T| Record::of(&t).unwrap_err();
        assert!(no(compound(4, &[("s", 0, T::String)])).contains("no Zarr form"));
        assert!(no(compound(4, &[("c", 0, T::Char)])).contains("no Zarr form"));
        assert!(no(compound(4, &[("x", 2, T::Int)])).contains("past its record"));
        assert!(no(compound(4, &[("x", u64::MAX, T::Int)])).contains("past its record"));
        assert!(no(compound(8, &[("x", 0, T::Int), ("x", 4, T::Int)])).contains("two fields"));
        assert!(no(compound(0, &[])).contains("no fields"));
        let mut t = compound(4, &[("x", 0, T::Int)]);
        for _ in 0..MAX_NESTING {
            t = compound(4, &[("n", 0, t)]);
        }
        assert!(no(t).contains("nested more than"));
    }
}
