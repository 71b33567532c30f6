//! Chunk key encodings: grid index -> store key suffix.
//!
//! - `default`: `c` then each index preceded by the separator (`c/1/0`,
//!   `c.1.0`); a 0-d array's single chunk is `c`.
//! - `v2`: the indices joined by the separator (`1.0`, `1/0`); a 0-d array's
//!   single chunk is `0`.
//!
//! The separator is `/` or `.` (default `/` for `default`, `.` for `v2`).
//! The key is relative to the array's prefix.

use super::extension::{MetadataError, extension_configuration, extension_name};
use crate::json::Value;

/// The grid index of the `linear`-th chunk of a grid of `grid_shape`
/// chunks, in C order (the numbering every view uses).
pub fn unravel(grid_shape: &[u64], mut linear: u64) -> Vec<u64> {
    let mut index = vec![0; grid_shape.len()];
    for d in (0..grid_shape.len()).rev() {
        index[d] = linear % grid_shape[d];
        linear /= grid_shape[d];
    }
    index
}

/// How a chunk's grid position becomes its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKeyEncoding {
    /// Zarr v3's `default`: `c/1/2` (`c` alone for a scalar).
    Default {
        /// Between the indices (`/` by default).
        separator: char,
    },
    /// Zarr v2's: `1.2` (`0` for a scalar).
    V2 {
        /// Between the indices (`.` by default).
        separator: char,
    },
}

impl ChunkKeyEncoding {
    /// Read `chunk_key_encoding` from metadata.
    pub fn from_json(v: &Value) -> Result<Self, MetadataError> {
        let name = extension_name(v, "chunk_key_encoding")?;
        let separator = match extension_configuration(v, "chunk_key_encoding")?.and_then(|c| c.get("separator")) {
            None => None,
            Some(Value::Str(s)) if s == "/" || s == "." => s.chars().next(),
            Some(other) => {
                return Err(MetadataError::Invalid {
                    member: "chunk_key_encoding",
                    reason: format!("separator {other} is not \"/\" or \".\""),
                });
            }
        };
        match name {
            "default" => Ok(ChunkKeyEncoding::Default {
                separator: separator.unwrap_or('/'),
            }),
            "v2" => Ok(ChunkKeyEncoding::V2 {
                separator: separator.unwrap_or('.'),
            }),
            other => Err(MetadataError::Unsupported {
                point: "chunk key encoding",
                name: other.into(),
            }),
        }
    }

    /// The key of the chunk at `index`, relative to the array prefix.
    pub fn key(&self, index: &[u64]) -> String {
        let mut out = String::new();
        match *self {
            ChunkKeyEncoding::Default { separator } => {
                out.push('c');
                for i in index {
                    out.push(separator);
                    out.push_str(&i.to_string());
                }
            }
            ChunkKeyEncoding::V2 { separator } => {
                if index.is_empty() {
                    out.push('0');
                }
                for (n, i) in index.iter().enumerate() {
                    if n > 0 {
                        out.push(separator);
                    }
                    out.push_str(&i.to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn enc(s: &str) -> ChunkKeyEncoding {
        ChunkKeyEncoding::from_json(&parse(s.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn keys() {
        assert_eq!(enc(r#"{"name": "default"}"#).key(&[1, 23, 45]), "c/1/23/45");
        assert_eq!(enc(r#""default""#).key(&[]), "c");
        assert_eq!(
            enc(r#"{"name": "default", "configuration": {"separator": "."}}"#).key(&[1, 0]),
            "c.1.0"
        );
        assert_eq!(enc(r#"{"name": "v2"}"#).key(&[1, 23, 45]), "1.23.45");
        assert_eq!(
            enc(r#"{"name": "v2", "configuration": {"separator": "/"}}"#).key(&[1, 0]),
            "1/0"
        );
        assert_eq!(enc(r#"{"name": "v2"}"#).key(&[]), "0");
        assert!(
            ChunkKeyEncoding::from_json(&parse(br#"{"name": "v2", "configuration": {"separator": "-"}}"#).unwrap())
                .is_err()
        );
    }
}
