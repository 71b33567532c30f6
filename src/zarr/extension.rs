//! What every extension point of a `zarr.json` shares (data types, chunk
//! key encodings, codecs): the short-hand-or-object naming, the
//! configuration object, and [`MetadataError`], the one reason type for a
//! refused document. A leaf module: it imports only `json`.

use crate::json::{JsonError, Value};

/// Largest decoded chunk nzfs will hold in memory (2 GiB).
pub const MAX_CHUNK_BYTES: u64 = 2 << 30;

/// Why a metadata document was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetadataError {
    #[error("{0}")]
    Json(#[from] JsonError),
    #[error("the document is not a JSON object")]
    NotAnObject,
    #[error("zarr_format is {0}, expected 3")]
    WrongFormat(String),
    #[error("node_type is {0}, expected \"array\" or \"group\"")]
    WrongNodeType(String),
    #[error("required member `{0}` is missing")]
    Missing(&'static str),
    #[error("member `{member}` is invalid: {reason}")]
    Invalid { member: &'static str, reason: String },
    #[error("unknown member `{0}` without \"must_understand\": false")]
    UnknownField(String),
    #[error("unsupported data type `{0}`")]
    UnknownDataType(String),
    #[error("fill_value {value} does not fit data type {data_type}")]
    BadFillValue { data_type: String, value: String },
    #[error("unsupported {point} `{name}`")]
    Unsupported { point: &'static str, name: String },
    #[error("codec `{codec}`: {reason}")]
    BadCodec { codec: String, reason: String },
    #[error("chunk of {0} bytes is larger than nzfs can hold ({MAX_CHUNK_BYTES} bytes)")]
    ChunkTooLarge(u128),
}

pub(crate) fn invalid(member: &'static str, reason: impl Into<String>) -> MetadataError {
    MetadataError::Invalid {
        member,
        reason: reason.into(),
    }
}

/// The name of an extension given as a short-hand string or as an object.
pub fn extension_name<'a>(v: &'a Value, member: &'static str) -> Result<&'a str, MetadataError> {
    match v {
        Value::Str(s) => Ok(s),
        Value::Object(_) => v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(member, "extension object has no string `name`")),
        other => Err(invalid(
            member,
            format!("expected a name or an object, found {}", other.kind()),
        )),
    }
}

/// An extension's configuration object (absent is `None`).
pub fn extension_configuration<'a>(v: &'a Value, member: &'static str) -> Result<Option<&'a Value>, MetadataError> {
    match v.get("configuration") {
        None | Some(Value::Null) => Ok(None),
        Some(c @ Value::Object(_)) => Ok(Some(c)),
        Some(_) => Err(invalid(member, "`configuration` is not an object")),
    }
}
