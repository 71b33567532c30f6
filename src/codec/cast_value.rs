//! `cast_value` (zarr-extensions/codecs/cast_value): an array ->
//! array codec that stored the values converted to another data type.
//! Example: `{"name": "cast_value", "configuration": {"data_type": "uint8",
//! "rounding": "nearest-even", "out_of_range": "clamp", "scalar_map":
//! {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}`.
//!
//! Decoding converts each stored value back to the array's type, as
//! zarr-python 3.4 (cast-value-rs) does: a `scalar_map.decode` entry first
//! (NaN keys match NaN); then integers exactly, floats to integers with the
//! `rounding` mode; a value out of the target's range is clamped or wrapped
//! as `out_of_range` says, and is an error without it (NaN and infinities
//! into an integer too). Conversions into a float round to nearest, ties to
//! even.
//!
//! Invariant: the output holds as many elements as the input, in the
//! array's type.

use super::CodecError;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::MetadataError;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rounding {
    NearestEven,
    TowardsZero,
    TowardsPositive,
    TowardsNegative,
    NearestAway,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutOfRange {
    Clamp,
    Wrap,
}

/// A configured `cast_value`, for decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct CastValue {
    /// The stored type (the configuration's `data_type`).
    pub encoded: DataType,
    /// The array's type at this stage.
    decoded: DataType,
    rounding: Rounding,
    out_of_range: Option<OutOfRange>,
    /// `scalar_map.decode`: stored value -> decoded value.
    decode_map: Vec<(Num, Num)>,
}

fn bad(reason: String) -> MetadataError {
    MetadataError::BadCodec {
        codec: "cast_value".into(),
        reason,
    }
}

/// Integer data types: (bytes, signed).
fn int_type(dt: &DataType) -> Option<(usize, bool)> {
    Some(match dt {
        DataType::Int8 => (1, true),
        DataType::Int16 => (2, true),
        DataType::Int32 => (4, true),
        DataType::Int64 => (8, true),
        DataType::UInt8 => (1, false),
        DataType::UInt16 => (2, false),
        DataType::UInt32 => (4, false),
        DataType::UInt64 => (8, false),
        _ => return None,
    })
}

fn float_type(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::BFloat16 | DataType::Float32 | DataType::Float64
    )
}

/// Element `i` of native-endian `data` of type `dt` as a number.
fn read(dt: &DataType, data: &[u8], i: usize) -> Num {
    let size = dt.size();
    let b = &data[i * size..(i + 1) * size];
    match dt {
        DataType::Float16 => Num::Float(f64::from(half::f16::from_ne_bytes([b[0], b[1]]))),
        DataType::BFloat16 => Num::Float(f64::from(half::bf16::from_ne_bytes([b[0], b[1]]))),
        DataType::Float32 => Num::Float(f64::from(f32::from_ne_bytes(b.try_into().expect("4 bytes")))),
        DataType::Float64 => Num::Float(f64::from_ne_bytes(b.try_into().expect("8 bytes"))),
        _ => {
            let (size, signed) = int_type(dt).expect("an integer type");
            let mut wide = [0u8; 16];
            let mut le = b.to_vec();
            if cfg!(target_endian = "big") {
                le.reverse();
            }
            wide[..size].copy_from_slice(&le);
            if signed && le[size - 1] & 0x80 != 0 {
                wide[size..].fill(0xFF);
            }
            Num::Int(i128::from_le_bytes(wide))
        }
    }
}

/// Write `v` (already in range and of the right kind) as element `i`.
fn write(dt: &DataType, out: &mut [u8], i: usize, v: Num) {
    let size = dt.size();
    let b = &mut out[i * size..(i + 1) * size];
    match (dt, v) {
        (DataType::Float16, Num::Float(x)) => b.copy_from_slice(&half::f16::from_f64(x).to_ne_bytes()),
        (DataType::BFloat16, Num::Float(x)) => b.copy_from_slice(&half::bf16::from_f64(x).to_ne_bytes()),
        (DataType::Float32, Num::Float(x)) => b.copy_from_slice(&(x as f32).to_ne_bytes()),
        (DataType::Float64, Num::Float(x)) => b.copy_from_slice(&x.to_ne_bytes()),
        (_, Num::Int(x)) => {
            let mut le = x.to_le_bytes()[..size].to_vec();
            if cfg!(target_endian = "big") {
                le.reverse();
            }
            b.copy_from_slice(&le);
        }
        (_, Num::Float(_)) => unreachable!("converted before writing"),
    }
}

impl CastValue {
    /// The codec on an array (stage) of type `decoded`.
    pub fn from_configuration(config: Option<&Value>, decoded: &DataType) -> Result<Self, MetadataError> {
        let config = config.ok_or_else(|| bad("configuration with data_type is required".into()))?;
        let encoded = DataType::from_json(
            config
                .get("data_type")
                .ok_or_else(|| bad("configuration.data_type is required".into()))?,
        )?;
        for dt in [encoded.clone(), decoded.clone()] {
            if int_type(&dt).is_none() && !float_type(&dt) {
                return Err(bad(format!("not defined for {}", dt.name())));
            }
        }
        let rounding = match config.get("rounding").and_then(Value::as_str).unwrap_or("nearest-even") {
            "nearest-even" => Rounding::NearestEven,
            "towards-zero" => Rounding::TowardsZero,
            "towards-positive" => Rounding::TowardsPositive,
            "towards-negative" => Rounding::TowardsNegative,
            "nearest-away" => Rounding::NearestAway,
            other => return Err(bad(format!("unknown rounding {other:?}"))),
        };
        let out_of_range = match config.get("out_of_range") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_str() {
                Some("clamp") => Some(OutOfRange::Clamp),
                Some("wrap") if int_type(decoded).is_some() => Some(OutOfRange::Wrap),
                _ => return Err(bad(format!("out_of_range {v} is not \"clamp\" or \"wrap\" (integers)"))),
            },
        };
        let number = |dt: &DataType, v: &Value| -> Result<Num, MetadataError> {
            let bytes = dt.fill_value(v).map_err(|e| bad(format!("scalar_map: {e}")))?;
            Ok(read(dt, &bytes.0, 0))
        };
        let mut decode_map = Vec::new();
        if let Some(Value::Array(pairs)) = config.get("scalar_map").and_then(|m| m.get("decode")) {
            for pair in pairs {
                match pair {
                    Value::Array(kv) if kv.len() == 2 => {
                        decode_map.push((number(&encoded, &kv[0])?, number(decoded, &kv[1])?));
                    }
                    other => return Err(bad(format!("scalar_map entry {other} is not a pair"))),
                }
            }
        }
        Ok(CastValue {
            encoded,
            decoded: decoded.clone(),
            rounding,
            out_of_range,
            decode_map,
        })
    }

    /// Decode stored elements (type `encoded`) into the array's type.
    pub fn decode(&self, input: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let n = input.len() / self.encoded.size();
        let mut out = vec![0u8; n * self.decoded.size()];
        for i in 0..n {
            let v = read(&self.encoded, &input, i);
            let mapped = self.decode_map.iter().find(|(k, _)| match (k, v) {
                (Num::Float(a), Num::Float(b)) => a == &b || (a.is_nan() && b.is_nan()),
                (a, b) => *a == b,
            });
            let converted = match mapped {
                Some(&(_, to)) => to,
                None => self.convert(v)?,
            };
            write(&self.decoded, &mut out, i, converted);
        }
        Ok(out)
    }

    fn convert(&self, v: Num) -> Result<Num, CodecError> {
        let corrupt = |reason: String| CodecError::Corrupt {
            codec: "cast_value",
            reason,
        };
        let Some((size, signed)) = int_type(&self.decoded) else {
            // Into a float: nearest, ties to even (the width's own rounding
            // happens when it is written).
            return Ok(Num::Float(match v {
                Num::Int(x) => x as f64,
                Num::Float(x) => x,
            }));
        };
        let x = match v {
            Num::Int(x) => x,
            Num::Float(f) if !f.is_finite() => {
                return Err(corrupt(format!("{f} has no {} value", self.decoded.name())));
            }
            Num::Float(f) => {
                let r = match self.rounding {
                    Rounding::NearestEven => f.round_ties_even(),
                    Rounding::TowardsZero => f.trunc(),
                    Rounding::TowardsPositive => f.ceil(),
                    Rounding::TowardsNegative => f.floor(),
                    Rounding::NearestAway => f.round(),
                };
                // Beyond i128 only clamping can answer; wrap takes the low bits.
                r.clamp(i128::MIN as f64, i128::MAX as f64) as i128
            }
        };
        let bits = 8 * size as u32;
        let (lo, hi) = match signed {
            true => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            false => (0, (1i128 << bits) - 1),
        };
        if (lo..=hi).contains(&x) {
            return Ok(Num::Int(x));
        }
        match self.out_of_range {
            Some(OutOfRange::Clamp) => Ok(Num::Int(x.clamp(lo, hi))),
            Some(OutOfRange::Wrap) => Ok(Num::Int((x - lo).rem_euclid(1i128 << bits) + lo)),
            None => Err(corrupt(format!("{x} is out of the range of {}", self.decoded.name()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(config: &str, dt: &DataType) -> Result<CastValue, MetadataError> {
        CastValue::from_configuration(Some(&parse(config.as_bytes()).unwrap()), dt)
    }

    #[test]
    fn decodes_into_the_arrays_type() {
        // uint8 counts back to float32, 0 mapped to NaN.
        let c = codec(
            r#"{"data_type": "uint8", "out_of_range": "clamp", "scalar_map": {"decode": [[0, "NaN"]]}}"#,
            &DataType::Float32,
        )
        .unwrap();
        let got: Vec<f32> = c
            .decode(vec![0, 1, 255])
            .unwrap()
            .chunks(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert!(got[0].is_nan() && got[1..] == [1.0, 255.0], "{got:?}");
        // float64 into int16: rounding modes, clamping, wrapping, errors.
        let stored: Vec<u8> = [2.5f64, -2.5, 40000.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let as_i16 = |b: Vec<u8>| -> Vec<i16> { b.chunks(2).map(|c| i16::from_ne_bytes([c[0], c[1]])).collect() };
        let clamp = codec(r#"{"data_type": "float64", "out_of_range": "clamp"}"#, &DataType::Int16).unwrap();
        assert_eq!(as_i16(clamp.decode(stored.clone()).unwrap()), [2, -2, 32767]);
        let away = codec(
            r#"{"data_type": "float64", "rounding": "nearest-away", "out_of_range": "wrap"}"#,
            &DataType::Int16,
        )
        .unwrap();
        assert_eq!(
            as_i16(away.decode(stored.clone()).unwrap()),
            [3, -3, (40000i32 - 65536) as i16]
        );
        let strict = codec(r#"{"data_type": "float64"}"#, &DataType::Int16).unwrap();
        assert!(strict.decode(stored).is_err());
        assert!(strict.decode(f64::NAN.to_ne_bytes().to_vec()).is_err());
        assert!(codec(r#"{"data_type": "uint8", "out_of_range": "wrap"}"#, &DataType::Float32).is_err());
        assert!(codec(r#"{"data_type": "bool"}"#, &DataType::Int8).is_err());
    }
}
