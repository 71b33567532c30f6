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
    /// Not JSON.
    #[error("{0}")]
    Json(#[from] JsonError),
    /// JSON, but not an object.
    #[error("the document is not a JSON object")]
    NotAnObject,
    /// A `zarr_format` this reader does not read.
    #[error("zarr_format is {0}, expected 3")]
    WrongFormat(String),
    /// A `node_type` other than `array` or `group`.
    #[error("node_type is {0}, expected \"array\" or \"group\"")]
    WrongNodeType(String),
    /// A required member is absent.
    #[error("required member `{0}` is missing")]
    Missing(&'static str),
    /// A member's value is not what the spec allows.
    #[error("member `{member}` is invalid: {reason}")]
    Invalid {
        /// The member.
        member: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An unknown member that does not say `must_understand: false`.
    #[error("unknown member `{0}` without \"must_understand\": false")]
    UnknownField(String),
    /// A data type nzfs does not know.
    #[error("unsupported data type `{0}`")]
    UnknownDataType(String),
    /// A fill value its data type cannot hold.
    #[error("fill_value {value} does not fit data type {data_type}")]
    BadFillValue {
        /// The data type.
        data_type: String,
        /// The fill value, as written.
        value: String,
    },
    /// An extension nzfs does not know, which must be understood.
    #[error("unsupported {point} `{name}`")]
    Unsupported {
        /// Which extension point (`codec`, `chunk_grid`, ...).
        point: &'static str,
        /// The extension's name.
        name: String,
    },
    /// A codec's configuration is refused.
    #[error("codec `{codec}`: {reason}")]
    BadCodec {
        /// The codec.
        codec: String,
        /// What is wrong with its configuration.
        reason: String,
    },
    /// A chunk whose decoded bytes pass what nzfs holds.
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
