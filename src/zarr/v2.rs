//! Zarr v2 metadata (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`; spec:
//! zarr-v2/v2.0.rst) and netCDF-C's NCZarr keys, read into the same model
//! as v3, so that no view knows which format a node came from.
//!
//! An array's v2 description becomes a v3-style codec list:
//! `transpose` (reversed axes) when `order` is `"F"`; `bytes` with the
//! dtype's byte order; each filter, then the compressor, as
//! `numcodecs.<id>` codecs after `bytes`, where numcodecs filters act on
//! the stored bytes exactly as in v2. The chunk key encoding is `v2` with
//! the array's `dimension_separator`.
//!
//! Attributes, as xarray and netCDF-C use them: `_ARRAY_DIMENSIONS` gives
//! the dimension names; the zarr `fill_value` is also the CF `_FillValue`
//! (added unless `.zattrs` has one, and absent for `null`); NCZarr's
//! `_NCZARR_ARRAY.dimrefs` name the dimensions (`/sub/n` -> `n`),
//! `storage: "scalar"` makes the shape-`[1]` array 0-d, and
//! `_NCZARR_ATTR.types` give attribute types. `_ARRAY_DIMENSIONS`,
//! `_NCProperties` and `_NCZARR_*` keys never reach the attributes.

use std::sync::Arc;

use base64::Engine;

use super::chunk_key::ChunkKeyEncoding;
use super::data_type::{DataType, FillValue};
use super::extension::{MetadataError, invalid};
use super::metadata::{ArrayMetadata, CodecSpec, GroupMetadata, check_chunk_grid, u64_list};
use super::numpy::{parse_dtype, parse_record};
use crate::json::Value;

/// A member of an NCZarr document, in either spelling netCDF-C has used.
fn nczarr<'a>(doc: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let doc = doc?;
    doc.get(key).or_else(|| doc.get(&key.to_ascii_lowercase()))
}

/// Whether an attribute key is bookkeeping that the CDL never shows.
fn is_hidden(key: &str) -> bool {
    key == "_ARRAY_DIMENSIONS" || key == "_NCProperties" || key.to_ascii_uppercase().starts_with("_NCZARR_")
}

/// Attributes, and the types NCZarr records for some of them.
type Attributes = (Vec<(String, Value)>, Vec<(String, DataType)>);

/// The attributes of `.zattrs` (and any NCZarr attribute types).
fn attributes(zattrs: Option<&Value>) -> Result<Attributes, MetadataError> {
    let members = match zattrs {
        None | Some(Value::Null) => return Ok((Vec::new(), Vec::new())),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid("attributes", ".zattrs is not an object")),
    };
    let mut types = Vec::new();
    if let Some(Value::Object(t)) = nczarr(zattrs, "_NCZARR_ATTR").and_then(|a| a.get("types")) {
        for (k, v) in t {
            // Text types ("<U1", "|S1") keep the default mapping.
            if let Some((dt, _)) = v.as_str().and_then(|s| parse_dtype(s).ok())
                && !matches!(dt, DataType::FixedBytes(_) | DataType::FixedUtf32(_))
            {
                types.push((k.clone(), dt));
            }
        }
    }
    let attrs = members.iter().filter(|(k, _)| !is_hidden(k)).cloned().collect();
    Ok((attrs, types))
}

/// Read `.zgroup` (and `.zattrs`) as group metadata.
pub fn parse_group(zgroup: &Value, zattrs: Option<&Value>) -> Result<GroupMetadata, MetadataError> {
    check_format(zgroup)?;
    let (attributes, attribute_types) = attributes(zattrs)?;
    let mut dimensions = Vec::new();
    if let Some(Value::Object(dims)) = nczarr(Some(zgroup), "_NCZARR_GROUP").and_then(|g| g.get("dims")) {
        for (name, len) in dims {
            // netCDF-C 4.9 writes a length; later versions an object.
            let len = len.as_u64().or_else(|| len.get("size").and_then(Value::as_u64));
            if let Some(len) = len {
                dimensions.push((name.clone(), len));
            }
        }
    }
    Ok(GroupMetadata {
        attributes,
        consolidated: None,
        attribute_types,
        dimensions,
        zarr_format: 2,
    })
}

fn check_format(doc: &Value) -> Result<(), MetadataError> {
    if doc.as_object().is_none() {
        return Err(MetadataError::NotAnObject);
    }
    match doc.get("zarr_format") {
        Some(Value::Int(2)) => Ok(()),
        Some(other) => Err(MetadataError::WrongFormat(other.to_string())),
        None => Err(MetadataError::Missing("zarr_format")),
    }
}

/// A numcodecs codec object (`{"id": "zlib", "level": 1}`) as a codec spec.
fn numcodecs_spec(v: &Value, member: &'static str) -> Result<CodecSpec, MetadataError> {
    let members = v
        .as_object()
        .ok_or_else(|| invalid(member, "a codec is not an object"))?;
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(member, "a codec has no string `id`"))?;
    let config: Vec<(String, Value)> = members.iter().filter(|(k, _)| k != "id").cloned().collect();
    Ok(CodecSpec {
        name: format!("numcodecs.{id}"),
        configuration: Some(Value::Object(config)),
        must_understand: true,
    })
}

/// Read `.zarray` (and `.zattrs`) as array metadata.
pub fn parse_array(zarray: &Value, zattrs: Option<&Value>) -> Result<ArrayMetadata, MetadataError> {
    check_format(zarray)?;
    let get = |m: &'static str| zarray.get(m).ok_or(MetadataError::Missing(m));
    let mut shape = u64_list(get("shape")?, "shape")?;
    let mut chunk_shape = u64_list(get("chunks")?, "chunks")?;
    if chunk_shape.len() != shape.len() {
        return Err(invalid(
            "chunks",
            format!("{} dimensions, shape has {}", chunk_shape.len(), shape.len()),
        ));
    }
    // A record list gives each field its own byte order (`Record`); the
    // `bytes` codec's order then only matters to fields without one.
    let (dtype, record) = match zarray.get("dtype") {
        Some(Value::Str(s)) => (s.as_str(), None),
        Some(Value::Array(fields)) => ("", Some(parse_record(fields, 0)?)),
        _ => return Err(MetadataError::Missing("dtype")),
    };
    let filters = match zarray.get("filters") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(list)) => list.as_slice(),
        Some(_) => return Err(invalid("filters", "not a list")),
    };
    // An object array holds what its first filter (the object codec) says.
    let object_codec = filters.first().and_then(|f| f.get("id")).and_then(Value::as_str);
    let (data_type, big) = match (record, dtype, object_codec) {
        (Some(r), _, _) => (DataType::Struct(Arc::new(r)), false),
        (None, "|O", Some("vlen-utf8")) => (DataType::String, false),
        (None, "|O", Some("vlen-bytes")) => (DataType::Bytes, false),
        (None, "|O", other) => {
            return Err(MetadataError::UnknownDataType(format!(
                "object dtype |O with object codec {} (nzfs reads vlen-utf8 and vlen-bytes)",
                other.unwrap_or("none")
            )));
        }
        // tensorstore's zarr driver names the types numpy has no string
        // for as zarr v3 does (`bfloat16`, `int4`, `float8_e4m3fn`, …),
        // each stored as in v3.
        _ => match parse_dtype(dtype) {
            Ok(parsed) => parsed,
            Err(e) => match DataType::from_json(&Value::Str(dtype.into())) {
                Ok(t @ (DataType::BFloat16 | DataType::Narrow(_))) => (t, false),
                // "unsupported data type `name`" (not "``name` is not …`").
                _ if matches!(e, crate::zarr::numpy::DtypeError::NotATypeString(_)) => {
                    return Err(MetadataError::UnknownDataType(dtype.to_string()));
                }
                _ => return Err(MetadataError::UnknownDataType(e.to_string())),
            },
        },
    };
    // As v3 reads them: shown as the type that holds every value.
    let (data_type, narrow) = match data_type {
        DataType::Narrow(n) => (n.shown(), Some(n)),
        DataType::BFloat16 => (DataType::BFloat16, Some(super::data_type::narrow::Narrow::BFLOAT16)),
        other => (other, None),
    };
    let filters = if data_type.element_size().is_none() {
        &filters[1..]
    } else {
        filters
    };
    check_chunk_grid(&shape, &chunk_shape, &data_type, "chunks")?;

    let separator = match zarray.get("dimension_separator") {
        None | Some(Value::Null) => '.',
        Some(Value::Str(s)) if s == "." || s == "/" => s.chars().next().expect("one char"),
        Some(other) => return Err(invalid("dimension_separator", format!("{other} is not \".\" or \"/\""))),
    };

    let mut codecs = Vec::new();
    match zarray.get("order").and_then(Value::as_str) {
        Some("C") => {}
        Some("F") if shape.len() > 1 => {
            let order: Vec<Value> = (0..shape.len() as i64).rev().map(Value::Int).collect();
            codecs.push(CodecSpec {
                name: "transpose".into(),
                configuration: Some(Value::Object(vec![("order".into(), Value::Array(order))])),
                must_understand: true,
            });
        }
        Some("F") => {}
        _ => return Err(invalid("order", "not \"C\" or \"F\"")),
    }
    match data_type {
        DataType::String | DataType::Bytes => {
            let name = if data_type == DataType::String {
                "vlen-utf8"
            } else {
                "vlen-bytes"
            };
            codecs.push(CodecSpec {
                name: name.into(),
                configuration: None,
                must_understand: true,
            });
        }
        _ => {
            let endian = if big { "big" } else { "little" };
            codecs.push(CodecSpec {
                name: "bytes".into(),
                configuration: Some(Value::Object(vec![("endian".into(), Value::Str(endian.into()))])),
                must_understand: true,
            });
        }
    }
    for f in filters {
        codecs.push(numcodecs_spec(f, "filters")?);
    }
    match zarray.get("compressor") {
        None | Some(Value::Null) => {}
        Some(c) => {
            let spec = numcodecs_spec(c, "compressor")?;
            // zfpy and pcodec compress the chunk as an array of its type
            // (numcodecs hands them the array): they take the bytes codec's
            // place, as numcodecs.zfpy and numcodecs.pcodec do in v3.
            if matches!(spec.name.as_str(), "numcodecs.zfpy" | "numcodecs.pcodec") && filters.is_empty() {
                codecs.retain(|c| c.name != "bytes");
            }
            codecs.push(spec);
        }
    }

    let fill_value_json = zarray.get("fill_value").cloned().unwrap_or(Value::Null);
    let fill_value = match (&fill_value_json, data_type.clone()) {
        // A variable-length type's fill of null is the empty string.
        (Value::Null, dt) if dt.element_size().is_none() => dt.fill_value(&Value::Null)?,
        (Value::Null, dt) => FillValue(vec![0; dt.size()]),
        // zarr-python (2.x and 3.x) writes a `U` fill as the string itself
        // and an `S`/`V` fill as base64 ("abcd" read as base64
        // served wrong bytes).
        (Value::Str(text), DataType::FixedUtf32(n)) => {
            let units: Vec<char> = text.chars().collect();
            if units.len() > n {
                return Err(MetadataError::BadFillValue {
                    data_type: data_type.name(),
                    value: fill_value_json.to_string(),
                });
            }
            FillValue(
                units
                    .iter()
                    .flat_map(|&c| (c as u32).to_ne_bytes())
                    .chain(std::iter::repeat_n(0, 4 * (n - units.len())))
                    .collect(),
            )
        }
        // zarr 2.x wrote `0` for the fill of some `S` and `U` arrays; it
        // read that as the empty string, and so does nzfs.
        (Value::Int(0) | Value::UInt(0), DataType::FixedBytes(_) | DataType::FixedUtf32(_)) => {
            tracing::info!(dtype = %data_type.name(), "a fill_value of 0 for a string type: read as the empty string, as zarr 2.x did");
            FillValue(vec![0; data_type.size()])
        }
        (Value::Str(b64), DataType::FixedBytes(_) | DataType::Raw(_)) => {
            base64_fill(b64, &data_type, big).ok_or_else(|| MetadataError::BadFillValue {
                data_type: data_type.name(),
                value: fill_value_json.to_string(),
            })?
        }
        // tensorstore writes a narrow float's fill (and bfloat16's) as the
        // base64 of its stored bytes: read as those bits ("0x…").
        (v, _) if narrow.is_some() => {
            let n = narrow.expect("some");
            let bad = || MetadataError::BadFillValue {
                data_type: n.name().into(),
                value: v.to_string(),
            };
            let bits = match v {
                Value::Str(s) if !matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") && !s.starts_with("0x") => {
                    let raw = base64::engine::general_purpose::STANDARD.decode(s).map_err(|_| bad())?;
                    let code = match raw.as_slice() {
                        [b] => u32::from(*b),
                        [lo, hi] => u32::from(u16::from_le_bytes([*lo, *hi])),
                        _ => return Err(bad()),
                    };
                    Value::Str(format!("0x{code:x}"))
                }
                v => v.clone(),
            };
            match n == super::data_type::narrow::Narrow::BFLOAT16 {
                true => data_type.fill_value(&bits)?,
                false => n.fill_value(&bits).ok_or_else(bad)?,
            }
        }
        (v, dt) => dt.fill_value(v)?,
    };

    let (mut attributes, attribute_types) = attributes(zattrs)?;
    let nc_array = nczarr(Some(zarray), "_NCZARR_ARRAY");
    let mut dimension_names = vec![None; shape.len()];
    let mut has_dimension_names = false;
    if let Some(Value::Array(names)) = zattrs.and_then(|a| a.get("_ARRAY_DIMENSIONS"))
        && names.len() == shape.len()
    {
        dimension_names = names.iter().map(|n| n.as_str().map(str::to_string)).collect();
        has_dimension_names = dimension_names.iter().all(Option::is_some);
    }
    if let Some(Value::Array(refs)) = nc_array.and_then(|a| a.get("dimrefs"))
        && refs.len() == shape.len()
        && !refs.is_empty()
    {
        dimension_names = refs
            .iter()
            .map(|r| r.as_str().and_then(|r| r.rsplit('/').next()).map(str::to_string))
            .collect();
        has_dimension_names = dimension_names.iter().all(Option::is_some);
    }
    // netCDF-C writes a scalar as shape [1], saying so with
    // `storage: "scalar"` (NCZarr) or an empty `_ARRAY_DIMENSIONS` (both).
    let no_dims = matches!(zattrs.and_then(|a| a.get("_ARRAY_DIMENSIONS")), Some(Value::Array(d)) if d.is_empty());
    let scalar = no_dims || nc_array.and_then(|a| a.get("storage")).and_then(Value::as_str) == Some("scalar");
    if scalar && shape == [1] && chunk_shape == [1] {
        shape.clear();
        chunk_shape.clear();
        dimension_names.clear();
        has_dimension_names = true;
        // A 0-d array has one chunk, key "0": the v2 key of index [0] too.
        codecs.retain(|c| c.name != "transpose");
    }
    let numeric = !matches!(
        data_type,
        DataType::FixedBytes(_) | DataType::FixedUtf32(_) | DataType::Raw(_) | DataType::Struct(_)
    );
    if numeric && fill_value_json != Value::Null && !attributes.iter().any(|(k, _)| k == "_FillValue") {
        attributes.push(("_FillValue".into(), fill_value_json.clone()));
    }

    let axes = shape
        .iter()
        .zip(&chunk_shape)
        .map(|(&s, &c)| super::grid::Axis::regular(s, c))
        .collect();
    let mut a = ArrayMetadata {
        shape,
        data_type,
        narrow,
        axes,
        chunk_shape,
        chunk_key_encoding: ChunkKeyEncoding::V2 { separator },
        fill_value,
        fill_value_json,
        codecs,
        attributes,
        dimension_names,
        has_dimension_names,
        zarr_format: 2,
        unsupported: None,
        attribute_types,
    };
    a.add_time_attributes();
    Ok(a)
}

/// A v2 base64 fill value of a fixed-size byte or string type.
fn base64_fill(b64: &str, dt: &DataType, big: bool) -> Option<FillValue> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let mut out = vec![0u8; dt.size()];
    if bytes.len() > out.len() {
        return None;
    }
    out[..bytes.len()].copy_from_slice(&bytes);
    if big != cfg!(target_endian = "big") && dt.swap_unit() > 1 {
        for unit in out.chunks_mut(dt.swap_unit()) {
            unit.reverse();
        }
    }
    Some(FillValue(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn array(zarray: &str, zattrs: Option<&str>) -> Result<ArrayMetadata, MetadataError> {
        let attrs = zattrs.map(|a| parse(a.as_bytes()).unwrap());
        parse_array(&parse(zarray.as_bytes()).unwrap(), attrs.as_ref())
    }

    const BASE: &str = r#"{"zarr_format": 2, "shape": [4, 6], "chunks": [2, 3], "dtype": ">i2",
        "compressor": {"id": "zlib", "level": 1}, "fill_value": -1, "order": "F",
        "filters": [{"id": "delta", "dtype": ">i2"}], "dimension_separator": "/"}"#;

    #[test]
    fn codecs_order_and_attributes() {
        let a = array(BASE, Some(r#"{"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"}"#)).unwrap();
        let names: Vec<&str> = a.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["transpose", "bytes", "numcodecs.delta", "numcodecs.zlib"]);
        assert_eq!(a.chunk_key_encoding, ChunkKeyEncoding::V2 { separator: '/' });
        assert_eq!(a.dimension_names, [Some("y".into()), Some("x".into())]);
        assert!(a.has_dimension_names);
        let keys: Vec<&str> = a.attributes.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["units", "_FillValue"]);
        assert_eq!(a.fill_value.0, (-1i16).to_ne_bytes());
    }

    /// The fills zarr-python 3.1 writes for v2 string arrays (checked:
    /// `create_array(..., zarr_format=2, fill_value=...)`), and zarr 2.x's
    /// `0` for `|S1` and `<U4` (its fixtures 14 and 15).
    #[test]
    fn string_fills_as_zarr_python_writes_them() {
        let fill = |dtype: &str, fill: &str| {
            let z = format!(
                r#"{{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "{dtype}", "fill_value": {fill},
                "compressor": null, "filters": null, "order": "C"}}"#
            );
            array(&z, None).map(|a| a.fill_value.0)
        };
        let utf32 = |s: &str, n: usize| -> Vec<u8> {
            let mut v: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_ne_bytes()).collect();
            v.resize(4 * n, 0);
            v
        };
        assert_eq!(fill("<U4", r#""ab""#).unwrap(), utf32("ab", 4));
        // Valid base64, but a U fill is the string itself.
        assert_eq!(fill("<U4", r#""abcd""#).unwrap(), utf32("abcd", 4));
        assert_eq!(fill(">U2", r#""x""#).unwrap(), utf32("x", 2));
        assert_eq!(fill("<U2", r#""\u00e9\u00e9""#).unwrap(), utf32("\u{e9}\u{e9}", 2));
        assert!(fill("<U2", r#""abc""#).is_err());
        assert_eq!(fill("|S4", r#""YWI=""#).unwrap(), b"ab\0\0");
        assert_eq!(fill("|S4", r#""YWJjZA==""#).unwrap(), b"abcd");
        assert!(fill("|S4", r#""ab""#).is_err(), "an S fill is base64");
        assert_eq!(fill("|S1", "0").unwrap(), [0]);
        assert_eq!(fill("<U4", "0").unwrap(), [0; 16]);
    }

    #[test]
    fn null_fill_nczarr_scalar_and_refusals() {
        let nc = r#"{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "<i4", "fill_value": null,
            "order": "C", "compressor": null, "filters": null,
            "_NCZARR_ARRAY": {"dimrefs": [], "storage": "scalar"}}"#;
        let a = array(
            nc,
            Some(r#"{"_ARRAY_DIMENSIONS": [], "_NCZARR_ATTR": {"types": {"v": "<i1"}}, "v": 1}"#),
        )
        .unwrap();
        assert!(a.shape.is_empty());
        assert_eq!(a.attribute_types, [("v".to_string(), DataType::Int8)]);
        assert_eq!(a.attributes.len(), 1);
        assert_eq!(a.fill_value.0, [0; 4]);
        assert!(array(&BASE.replace(r#"">i2""#, r#"[["a", "<i4"]]"#), None).is_err());
        // zarr-python reads an object array's numeric fill as its text.
        let strings = r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "fill_value": 0,
            "order": "C", "compressor": null, "filters": [{"id": "vlen-utf8"}]}"#;
        let s = array(strings, None).unwrap();
        assert_eq!(
            (s.data_type, s.fill_value.0.as_slice()),
            (DataType::String, &b"0\n"[..])
        );
        assert_eq!(s.codecs[0].name, "vlen-utf8");
        assert!(array(&BASE.replace(r#""F""#, r#""K""#), None).is_err());
        assert!(array(&BASE.replace("[2, 3]", "[0, 3]"), None).is_err());
        assert!(array(&BASE.replace(r#""zarr_format": 2"#, r#""zarr_format": 3"#), None).is_err());
    }
}
