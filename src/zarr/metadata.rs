//! `zarr.json` documents: array and group metadata (Zarr v3.1 core spec).
//!
//! Strict where the spec is strict: an unknown top-level member makes the
//! node unreadable unless it is an object carrying `"must_understand": false`;
//! a non-empty `storage_transformers` is refused (nzfs knows none);
//! extension points may be objects or short-hand names.
//!
//! Invariants of a parsed [`ArrayMetadata`]: `shape`, `chunk_shape` and
//! `dimension_names` have the same length; every chunk dimension is > 0; the
//! decoded size of one chunk fits [`MAX_CHUNK_BYTES`] and the chunk count fits
//! `u64`, all with checked arithmetic.

use super::chunk_key::ChunkKeyEncoding;
use super::data_type::{DataType, FillValue};
use super::grid::Axis;
use crate::json::{JsonError, Limits, Value};

use super::extension::invalid;
pub use super::extension::{MAX_CHUNK_BYTES, MetadataError, extension_configuration, extension_name};
use crate::zarr::documents::ZATTRS;

/// `must_understand` of an extension object; `true` unless it says `false`.
pub fn must_understand(v: &Value) -> bool {
    !matches!(v.get("must_understand"), Some(Value::Bool(false)))
}

/// A list of codec extension definitions (`codecs`, or a sharding codec's
/// inner `codecs` and `index_codecs`), not yet interpreted.
pub fn codec_specs(items: &[Value]) -> Result<Vec<CodecSpec>, MetadataError> {
    items
        .iter()
        .map(|c| {
            Ok(CodecSpec {
                name: extension_name(c, "codecs")?.to_string(),
                configuration: extension_configuration(c, "codecs")?.cloned(),
                must_understand: must_understand(c),
            })
        })
        .collect()
}

/// One entry of `codecs`, not yet interpreted (see `codec::chain`).
#[derive(Debug, Clone, PartialEq)]
pub struct CodecSpec {
    /// The codec's name.
    pub name: String,
    /// Its `configuration`, if any.
    pub configuration: Option<Value>,
    /// Whether a reader that does not know it must refuse the array.
    pub must_understand: bool,
}

/// A parsed array `zarr.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMetadata {
    /// Elements along each dimension.
    pub shape: Vec<u64>,
    /// The element type every file shows.
    pub data_type: DataType,
    /// The type as stored, where it is narrower than what every file shows
    /// (`int4`, `float8_e4m3fn`, …, and `bfloat16`): the codec chain
    /// decodes this, and each chunk is widened to `data_type` (`int8`,
    /// `float32`, `complex64`; `BFloat16`, which every view shows as
    /// float32).
    pub narrow: Option<super::data_type::narrow::Narrow>,
    /// The chunk shape; for a rectilinear grid, the longest edge along
    /// each axis (what bounds a chunk's size).
    pub chunk_shape: Vec<u64>,
    /// The chunk grid, one axis per dimension.
    pub axes: Vec<Axis>,
    /// How chunk keys are spelled.
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// What an absent chunk's elements are.
    pub fill_value: FillValue,
    /// The fill value as written, for headers.
    pub fill_value_json: Value,
    /// The codecs, not yet interpreted.
    pub codecs: Vec<CodecSpec>,
    /// The user attributes, in document order.
    pub attributes: Vec<(String, Value)>,
    /// One entry per dimension; `None` for an unnamed dimension.
    pub dimension_names: Vec<Option<String>>,
    /// Whether `dimension_names` was present at all.
    pub has_dimension_names: bool,
    /// 3, or 2 for a Zarr v2 `.zarray` read into this model.
    pub zarr_format: u8,
    /// Attributes whose netCDF type the store records (NCZarr's
    /// `_NCZARR_ATTR.types`); the others follow NZ's default mapping.
    pub attribute_types: Vec<(String, DataType)>,
    /// What valid metadata names that nzfs cannot decode (an unknown chunk
    /// grid): the array's header is shown, its data files give EIO, and it
    /// has no chunk files.
    pub unsupported: Option<String>,
}

impl ArrayMetadata {
    /// The number of chunks along each dimension.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.axes.iter().map(Axis::count).collect()
    }

    /// Whether every chunk has the shape [`ArrayMetadata::chunk_shape`].
    pub fn is_regular(&self) -> bool {
        super::grid::is_regular(&self.axes)
    }

    /// The bytes of the whole array in C order (`data.bin`'s size), exact:
    /// a shape's product may pass `u64` (saturates at `u128::MAX`).
    pub fn flat_bytes(&self) -> u128 {
        self.shape
            .iter()
            .fold(self.data_type.size() as u128, |a, &d| a.saturating_mul(u128::from(d)))
    }

    /// Elements in the largest chunk (in every chunk of a regular grid).
    pub fn chunk_elements(&self) -> u64 {
        self.chunk_shape.iter().product()
    }

    /// Decoded bytes of the largest chunk (fits [`MAX_CHUNK_BYTES`]).
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_elements() * self.data_type.size() as u64
    }

    /// The shape of the chunk at grid index `grid`.
    pub fn chunk_shape_at(&self, grid: &[u64]) -> Vec<u64> {
        self.axes.iter().zip(grid).map(|(a, &i)| a.edge(i)).collect()
    }

    /// Elements in chunk `linear` (C order over the grid), with no
    /// allocation (asked on the read path).
    pub fn chunk_elements_of(&self, linear: u64) -> u64 {
        if self.is_regular() {
            return self.chunk_elements();
        }
        let mut rest = linear;
        let mut elements = 1;
        for axis in self.axes.iter().rev() {
            let count = axis.count().max(1);
            elements *= axis.edge(rest % count);
            rest /= count;
        }
        elements
    }

    /// Decoded bytes of chunk `linear`, the size of its chunk file.
    pub fn chunk_bytes_of(&self, linear: u64) -> u64 {
        self.chunk_elements_of(linear) * self.data_type.size() as u64
    }
}

/// A parsed group `zarr.json`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupMetadata {
    /// The user attributes, in document order.
    pub attributes: Vec<(String, Value)>,
    /// zarr-python's inline consolidated metadata: `(path, document)`.
    pub consolidated: Option<Vec<(String, Value)>>,
    /// As [`ArrayMetadata::attribute_types`].
    pub attribute_types: Vec<(String, DataType)>,
    /// Dimensions the group declares itself (NCZarr's `_NCZARR_GROUP`),
    /// whether or not an array uses them.
    pub dimensions: Vec<(String, u64)>,
    /// 3, or 2 for a Zarr v2 `.zgroup`.
    pub zarr_format: u8,
}

/// The attributes of a variable whose type is the variable's own (the
/// NUG's rule for `_FillValue`, `missing_value`, `valid_min`, `valid_max`
/// and `valid_range`; CF: a packed variable's are packed values, and
/// `flag_values` and `flag_masks` of the variable's type): the
/// header and the `.nc` give `_FillValue` that type, and the others where
/// they are integers that fit it ([`integers`]; NZ would make them int64,
/// which only CDF-5 holds). Floats keep double, as netCDF-C and xarray
/// write them.
pub const TYPED_BY_VARIABLE: [&str; 7] = [
    "_FillValue",
    "missing_value",
    "valid_min",
    "valid_max",
    "valid_range",
    "flag_values",
    "flag_masks",
];

/// Whether `v` is a JSON integer or a non-empty list of them.
pub fn integers(v: &crate::json::Value) -> bool {
    use crate::json::Value;
    match v {
        Value::Int(_) | Value::UInt(_) => true,
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| matches!(i, Value::Int(_) | Value::UInt(_))),
        _ => false,
    }
}

/// The most JSON text of one node's attributes kept (1 MiB: a few MiB
/// parsed; real attributes are a few KiB).
pub const ATTRIBUTES_MAX: usize = 1 << 20;
/// The most attributes of one node kept: netCDF readers look attributes up
/// one by one, and 50,000 of them took ncdump minutes.
pub const ATTRIBUTES_MAX_COUNT: usize = 4096;
/// The attribute that says which attributes were left out, and how large
/// they were, when a node's attributes pass those bounds.
pub const ATTRIBUTES_LEFT_OUT: &str = "_nz_omitted_attributes";

/// Which metadata document is parsed: where its attributes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    /// A `zarr.json` (members `attributes`, consolidated ones included)
    /// or a Zarr v2 `.zarray`/`.zgroup`.
    Node,
    /// A Zarr v2 `.zattrs`: the document is the attributes.
    Attributes,
    /// A Zarr v2 `.zmetadata`: members named `….zattrs`.
    ConsolidatedV2,
}

/// Parse a metadata document, keeping each node's attributes within
/// [`ATTRIBUTES_MAX`] bytes of text and [`ATTRIBUTES_MAX_COUNT`] members
/// (the members that do not fit are named,
/// with their size, in [`ATTRIBUTES_LEFT_OUT`]), so that parsed attributes
/// never take more than a few times that, however large the document.
/// Also the bytes of the document's text kept.
pub fn parse_document(bytes: &[u8], document: Document) -> Result<(Value, usize), JsonError> {
    let limits = Limits {
        limited: match document {
            Document::Node => |k| k == "attributes",
            Document::Attributes => |_| false,
            Document::ConsolidatedV2 => |k| k.ends_with(ZATTRS),
        },
        root: document == Document::Attributes,
        max: ATTRIBUTES_MAX,
        max_members: ATTRIBUTES_MAX_COUNT,
        note_key: ATTRIBUTES_LEFT_OUT,
    };
    let (doc, left_out) = crate::json::parse_limited(bytes, &limits)?;
    if left_out > 0 {
        tracing::info!(
            bytes = left_out,
            "attributes past what nzfs keeps of a node were left out (named in {ATTRIBUTES_LEFT_OUT})"
        );
    }
    Ok((doc, bytes.len() - left_out))
}

/// A parsed `zarr.json` of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeMetadata {
    /// An array's.
    Array(Box<ArrayMetadata>),
    /// A group's.
    Group(GroupMetadata),
}

impl NodeMetadata {
    /// Parse the bytes of a `zarr.json`.
    pub fn parse(bytes: &[u8]) -> Result<NodeMetadata, MetadataError> {
        Self::from_json(&parse_document(bytes, Document::Node)?.0)
    }

    /// Interpret an already-parsed document.
    pub fn from_json(doc: &Value) -> Result<NodeMetadata, MetadataError> {
        let members = doc.as_object().ok_or(MetadataError::NotAnObject)?;
        match doc.get("zarr_format") {
            Some(Value::Int(3)) => {}
            Some(other) => return Err(MetadataError::WrongFormat(other.to_string())),
            None => return Err(MetadataError::Missing("zarr_format")),
        }
        match doc.get("node_type").and_then(Value::as_str) {
            Some("array") => parse_array(doc, members).map(|a| NodeMetadata::Array(Box::new(a))),
            Some("group") => parse_group(doc, members).map(NodeMetadata::Group),
            Some(other) => Err(MetadataError::WrongNodeType(format!("\"{other}\""))),
            None => match doc.get("node_type") {
                Some(v) => Err(MetadataError::WrongNodeType(v.to_string())),
                None => Err(MetadataError::Missing("node_type")),
            },
        }
    }
}

/// Refuse members outside `known` unless they are objects saying
/// `"must_understand": false`.
fn check_unknown_members(members: &[(String, Value)], known: &[&str]) -> Result<(), MetadataError> {
    for (k, v) in members {
        if known.contains(&k.as_str()) {
            continue;
        }
        let optional = matches!(v, Value::Object(_)) && !must_understand(v);
        if !optional {
            return Err(MetadataError::UnknownField(k.clone()));
        }
    }
    Ok(())
}

fn attributes(doc: &Value) -> Result<Vec<(String, Value)>, MetadataError> {
    match doc.get("attributes") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(invalid("attributes", "not an object")),
    }
}

fn parse_group(doc: &Value, members: &[(String, Value)]) -> Result<GroupMetadata, MetadataError> {
    check_unknown_members(
        members,
        &["zarr_format", "node_type", "attributes", "consolidated_metadata"],
    )?;
    let consolidated = match doc.get("consolidated_metadata") {
        None | Some(Value::Null) => None,
        Some(cm) => {
            if cm.get("kind").and_then(Value::as_str) != Some("inline") {
                // Only zarr-python's inline form exists; anything else is ignorable
                // (must_understand is false for this member) and the store is listed.
                None
            } else {
                match cm.get("metadata") {
                    Some(Value::Object(m)) => Some(m.clone()),
                    _ => return Err(invalid("consolidated_metadata", "`metadata` is not an object")),
                }
            }
        }
    };
    Ok(GroupMetadata {
        attributes: attributes(doc)?,
        consolidated,
        zarr_format: 3,
        ..GroupMetadata::default()
    })
}

/// The limits every chunk grid must keep (v3 and v2 alike): no chunk
/// dimension is 0, a decoded chunk fits [`MAX_CHUNK_BYTES`], and the chunk
/// count fits `u64` (it names inodes and files). `member` names the
/// document member holding the chunk shape.
pub(crate) fn check_chunk_grid(
    shape: &[u64],
    chunk_shape: &[u64],
    data_type: &DataType,
    member: &'static str,
) -> Result<(), MetadataError> {
    if chunk_shape.contains(&0) {
        return Err(invalid(member, "a chunk dimension is 0"));
    }
    let chunk_bytes = chunk_shape
        .iter()
        .try_fold(data_type.size() as u128, |acc, &c| acc.checked_mul(u128::from(c)))
        .unwrap_or(u128::MAX);
    if chunk_bytes > u128::from(MAX_CHUNK_BYTES) {
        return Err(MetadataError::ChunkTooLarge(chunk_bytes));
    }
    shape
        .iter()
        .zip(chunk_shape)
        .try_fold(1u64, |acc, (&s, &c)| acc.checked_mul(s.div_ceil(c)))
        .ok_or_else(|| invalid("shape", "the number of chunks overflows 64 bits"))?;
    Ok(())
}

/// A list of non-negative integers (`shape`, `chunk_shape`, v2 `chunks`).
pub(crate) fn u64_list(v: &Value, member: &'static str) -> Result<Vec<u64>, MetadataError> {
    let items = v.as_array().ok_or_else(|| invalid(member, "not an array"))?;
    items
        .iter()
        .map(|x| {
            x.as_u64()
                .ok_or_else(|| invalid(member, format!("{x} is not a non-negative integer")))
        })
        .collect()
}

fn parse_array(doc: &Value, members: &[(String, Value)]) -> Result<ArrayMetadata, MetadataError> {
    check_unknown_members(
        members,
        &[
            "zarr_format",
            "node_type",
            "shape",
            "data_type",
            "chunk_grid",
            "chunk_key_encoding",
            "fill_value",
            "codecs",
            "attributes",
            "storage_transformers",
            "dimension_names",
        ],
    )?;
    let get = |m: &'static str| doc.get(m).ok_or(MetadataError::Missing(m));

    let shape = u64_list(get("shape")?, "shape")?;
    let parsed = DataType::from_json(get("data_type")?)?;
    let (data_type, narrow) = match &parsed {
        DataType::Narrow(n) => (n.shown(), Some(*n)),
        DataType::BFloat16 => (DataType::BFloat16, Some(super::data_type::narrow::Narrow::BFLOAT16)),
        other => (other.clone(), None),
    };

    let grid = get("chunk_grid")?;
    let grid_name = extension_name(grid, "chunk_grid")?;
    let mut unsupported = None;
    let (chunk_shape, axes) = match grid_name {
        "regular" => {
            let chunk_shape = extension_configuration(grid, "chunk_grid")?
                .and_then(|c| c.get("chunk_shape"))
                .ok_or_else(|| invalid("chunk_grid", "regular grid without `chunk_shape`"))
                .and_then(|v| u64_list(v, "chunk_grid"))?;
            if chunk_shape.len() != shape.len() {
                return Err(invalid(
                    "chunk_grid",
                    format!(
                        "chunk_shape has {} dimensions, shape has {}",
                        chunk_shape.len(),
                        shape.len()
                    ),
                ));
            }
            check_chunk_grid(&shape, &chunk_shape, &data_type, "chunk_grid")?;
            let axes = shape
                .iter()
                .zip(&chunk_shape)
                .map(|(&s, &c)| Axis::regular(s, c))
                .collect();
            (chunk_shape, axes)
        }
        "rectilinear" => {
            let axes = super::grid::rectilinear(extension_configuration(grid, "chunk_grid")?, &shape)?;
            let chunk_shape: Vec<u64> = axes.iter().map(Axis::max_edge).collect();
            // The largest chunk bounds every chunk; the count must fit u64.
            check_chunk_grid(&chunk_shape, &chunk_shape, &data_type, "chunk_grid")?;
            axes.iter()
                .try_fold(1u64, |acc, a| acc.checked_mul(a.count()))
                .ok_or_else(|| invalid("shape", "the number of chunks overflows 64 bits"))?;
            (chunk_shape, axes)
        }
        // Valid metadata nzfs cannot decode: the header is still shown;
        // no chunks, and each chunk shape 1 so that nothing
        // sized from it is large.
        _ => {
            unsupported = Some(
                MetadataError::Unsupported {
                    point: "chunk grid",
                    name: grid_name.into(),
                }
                .to_string(),
            );
            (
                vec![1; shape.len()],
                vec![Axis::Regular { edge: 1, count: 0 }; shape.len()],
            )
        }
    };

    let chunk_key_encoding = ChunkKeyEncoding::from_json(get("chunk_key_encoding")?)?;
    let mut fill_value_json = get("fill_value")?.clone();
    if fill_value_json == Value::Null && data_type.element_size().is_some() {
        // The spec requires a fill value; zarrita.js writes null (on bool
        // arrays), and zarr-python reads it as the type's default: zero.
        tracing::info!(
            data_type = %data_type.name(),
            "fill_value null: read as the type's default (zero), as zarr-python does"
        );
        fill_value_json = match &data_type {
            DataType::Bool => Value::Bool(false),
            DataType::Float16 | DataType::BFloat16 | DataType::Float32 | DataType::Float64 => Value::Float(0.0),
            t if t.is_number() => Value::Int(0),
            _ => Value::Null,
        };
    }
    // bfloat16 reads its fill as it always has (DataType::fill_value: a
    // number as float32, "0x…" as its 16 bits); the other narrow types as
    // the registry spells theirs.
    let fill_value = match (&fill_value_json, &parsed) {
        (Value::Null, _) if data_type.element_size().is_some() => FillValue(vec![0; data_type.size()]),
        (v, DataType::Narrow(n)) => n.fill_value(v).ok_or_else(|| MetadataError::BadFillValue {
            data_type: n.name().into(),
            value: v.to_string(),
        })?,
        (v, _) => data_type.fill_value(v)?,
    };

    let codecs = codec_specs(
        get("codecs")?
            .as_array()
            .ok_or_else(|| invalid("codecs", "not an array"))?,
    )?;
    if codecs.is_empty() {
        return Err(invalid("codecs", "the list is empty"));
    }

    match doc.get("storage_transformers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) if list.is_empty() => {}
        Some(Value::Array(list)) => {
            let name = extension_name(&list[0], "storage_transformers")?;
            return Err(MetadataError::Unsupported {
                point: "storage transformer",
                name: name.into(),
            });
        }
        Some(_) => return Err(invalid("storage_transformers", "not an array")),
    }

    let (dimension_names, has_dimension_names) = match doc.get("dimension_names") {
        None | Some(Value::Null) => (vec![None; shape.len()], false),
        Some(Value::Array(names)) => {
            if names.len() != shape.len() {
                return Err(invalid(
                    "dimension_names",
                    format!("{} names for {} dimensions", names.len(), shape.len()),
                ));
            }
            let names = names
                .iter()
                .map(|n| match n {
                    Value::Str(s) if !s.is_empty() => Ok(Some(s.clone())),
                    Value::Str(_) | Value::Null => Ok(None),
                    other => Err(invalid("dimension_names", format!("{other} is not a string or null"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            (names, true)
        }
        Some(_) => return Err(invalid("dimension_names", "not an array")),
    };

    let mut a = ArrayMetadata {
        shape,
        data_type,
        narrow,
        chunk_shape,
        axes,
        chunk_key_encoding,
        fill_value,
        fill_value_json,
        codecs,
        attributes: attributes(doc)?,
        dimension_names,
        has_dimension_names,
        zarr_format: 3,
        attribute_types: Vec::new(),
        unsupported,
    };
    a.add_time_attributes();
    Ok(a)
}

impl ArrayMetadata {
    /// For a numpy datetime/timedelta array without `units`: the CF
    /// attributes its data type implies (`units`, `calendar`, and
    /// `scale_factor` for a scaled unit such as `10s`), and NaT as
    /// `_FillValue` when none is given.
    pub fn add_time_attributes(&mut self) {
        let (unit, scale, since) = match self.data_type {
            DataType::DateTime64 { unit, scale } => (unit, scale, true),
            DataType::TimeDelta64 { unit, scale } => (unit, scale, false),
            _ => return,
        };
        let has = |a: &[(String, Value)], k: &str| a.iter().any(|(n, _)| n == k);
        if unit != super::data_type::TimeUnit::Generic && !has(&self.attributes, "units") {
            // A scaled unit ("10 seconds since …") is valid UDUNITS, but
            // xarray, cftime and ncdump -t cannot decode it: the scale goes
            // into CF's scale_factor instead, which they all apply first.
            let word = unit.cf_name().to_string();
            if scale != 1 && !has(&self.attributes, "scale_factor") {
                self.attributes
                    .push(("scale_factor".into(), Value::Float(f64::from(scale))));
            }
            if since {
                self.attributes
                    .push(("units".into(), Value::Str(format!("{word} since 1970-01-01T00:00:00"))));
                if !has(&self.attributes, "calendar") {
                    self.attributes
                        .push(("calendar".into(), Value::Str("proleptic_gregorian".into())));
                }
            } else {
                self.attributes.push(("units".into(), Value::Str(word)));
            }
        }
        if !has(&self.attributes, "_FillValue") {
            self.attributes.push(("_FillValue".into(), Value::Int(i64::MIN)));
        }
    }
}

#[cfg(test)]
mod tests;
