//! A `_FillValue` attribute (netCDF's, not Zarr's `fill_value`) read as a
//! number, and whether it can be a value of an array's data type: the CDL
//! header, the virtual netCDF file and `nzfs check` read it here only.

use base64::Engine;

use super::DataType;
use crate::json::Value;

/// Why a `_FillValue` attribute is not a value of its array.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FillError {
    /// A string that is neither a number's name nor base64.
    #[error("a string that is neither a number nor base64 float64")]
    NotANumber,
    /// Base64 that is not one float64.
    #[error("base64 of other than 8 bytes")]
    Not8Bytes,
    /// A JSON value of a kind no fill can be (an object, a list).
    #[error("a JSON {0}")]
    Json(&'static str),
    /// A number the array's integer type cannot hold.
    #[error("{value} is outside {lo}..={hi} or not an integer")]
    Outside {
        /// The number.
        value: f64,
        /// The type's least value.
        lo: i128,
        /// The type's greatest value.
        hi: i128,
    },
    /// An array of a type with no scalar to compare with.
    #[error("no scalar value of {0} to compare with")]
    NoScalar(String),
}

/// A `_FillValue` attribute read as a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FillNumber {
    /// Written as an integer.
    Int(i128),
    /// Written as a float (or a float's name or base64).
    Float(f64),
}

impl FillNumber {
    /// The value as an integer, when it is one.
    pub fn integral(self) -> Option<i128> {
        match self {
            FillNumber::Int(i) => Some(i),
            FillNumber::Float(x) if x.fract() == 0.0 && x.abs() < 1.9e19 => Some(x as i128),
            FillNumber::Float(_) => None,
        }
    }

    /// The value as a float.
    pub fn as_f64(self) -> f64 {
        match self {
            FillNumber::Int(i) => i as f64,
            FillNumber::Float(x) => x,
        }
    }
}

/// Read a `_FillValue` attribute in any form writers use: a JSON number,
/// `"NaN"`, `"Infinity"`, `"-Infinity"`, or xarray's base64 of a
/// little-endian float64 (`"AAAAAICHw8A="` is -9999). The CDL header, the
/// virtual netCDF file and `nzfs check` all read it here, and nowhere else.
pub fn fill_value_number(v: &Value) -> Result<FillNumber, FillError> {
    match v {
        Value::Int(i) => Ok(FillNumber::Int((*i).into())),
        Value::UInt(u) => Ok(FillNumber::Int((*u).into())),
        Value::Float(x) => Ok(FillNumber::Float(*x)),
        Value::Str(s) => match s.as_str() {
            "NaN" => Ok(FillNumber::Float(f64::NAN)),
            "Infinity" => Ok(FillNumber::Float(f64::INFINITY)),
            "-Infinity" => Ok(FillNumber::Float(f64::NEG_INFINITY)),
            b64 => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|_| FillError::NotANumber)?;
                let b: [u8; 8] = bytes.try_into().map_err(|_| FillError::Not8Bytes)?;
                Ok(FillNumber::Float(f64::from_le_bytes(b)))
            }
        },
        other => Err(FillError::Json(other.kind())),
    }
}

/// Whether a `_FillValue` attribute can be a value of `dt`.
pub fn fill_value_fits(v: &Value, dt: &DataType) -> Result<(), FillError> {
    if matches!(v, Value::Bool(_)) && *dt == DataType::Bool {
        return Ok(());
    }
    let n = fill_value_number(v)?;
    match (dt, dt.int_range()) {
        (DataType::Float16 | DataType::BFloat16 | DataType::Float32 | DataType::Float64, _) => Ok(()),
        (_, Some((lo, hi))) => match n.integral() {
            Some(i) if (lo..=hi).contains(&i) => Ok(()),
            _ => Err(FillError::Outside {
                value: n.as_f64(),
                lo,
                hi,
            }),
        },
        (_, None) => Err(FillError::NoScalar(dt.name())),
    }
}
