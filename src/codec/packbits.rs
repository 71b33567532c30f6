//! zarr-extensions' `packbits`: an `array -> bytes` codec that
//! keeps bits `first_bit..=last_bit` of each component, packed one after
//! another, least significant bit first, with an optional byte giving the
//! number of padding bits before (`first_byte`) or after (`last_byte`)
//! them. Not numcodecs' `packbits` filter (filter.rs), which is an
//! `array -> array` codec for booleans.
//!
//! Decoding shifts each component's bits back to `first_bit`, sign-extends
//! a signed integer from `last_bit`, and writes the component in native
//! byte order. Invariants: the input length is exactly what the chunk's
//! element count implies (else an error, never a short or long output);
//! the output is `elements × size` bytes.

use super::CodecError;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::MetadataError;

const NAME: &str = "packbits";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Padding {
    None,
    FirstByte,
    LastByte,
}

/// `packbits`, configured: elements of fewer bits than a byte, packed.
#[derive(Debug, Clone, PartialEq)]
pub struct PackBits {
    padding: Padding,
    first_bit: u32,
    /// Bits kept per component (`last_bit - first_bit + 1`).
    bits: u32,
    /// Bits of a component as decoded (`N`).
    component_bits: u32,
    /// Components per element (2 for complex numbers).
    components: usize,
    signed: bool,
}

impl PackBits {
    /// The codec for elements of `data_type`, from its configuration.
    pub fn from_configuration(config: Option<&Value>, data_type: &DataType) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: NAME.into(),
            reason,
        };
        let (component_bits, components, signed) = match data_type {
            DataType::Bool => (1, 1, false),
            DataType::Int8 => (8, 1, true),
            DataType::Int16 => (16, 1, true),
            DataType::Int32 => (32, 1, true),
            DataType::Int64 => (64, 1, true),
            DataType::UInt8 => (8, 1, false),
            DataType::UInt16 | DataType::Float16 | DataType::BFloat16 => (16, 1, false),
            DataType::UInt32 | DataType::Float32 => (32, 1, false),
            DataType::UInt64 | DataType::Float64 => (64, 1, false),
            DataType::Complex64 => (32, 2, false),
            DataType::Complex128 => (64, 2, false),
            DataType::Narrow(n) => (n.component().bits(), n.components(), n.component().signed()),
            other => return Err(bad(format!("does not hold {}", other.name()))),
        };
        let member = |name: &str| config.and_then(|c| c.get(name)).filter(|v| !matches!(v, Value::Null));
        let bit = |name: &str, default: u32| match member(name) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|&b| b < u64::from(component_bits))
                .map(|b| b as u32)
                .ok_or_else(|| bad(format!("`{name}` {v} is not a bit of a {component_bits}-bit component"))),
        };
        let first_bit = bit("first_bit", 0)?;
        let last_bit = bit("last_bit", component_bits - 1)?;
        if last_bit < first_bit {
            return Err(bad(format!("`last_bit` {last_bit} is below `first_bit` {first_bit}")));
        }
        let padding = match member("padding_encoding") {
            None => Padding::None,
            Some(v) => match v.as_str() {
                Some("none") => Padding::None,
                Some("first_byte") => Padding::FirstByte,
                Some("last_byte") => Padding::LastByte,
                _ => return Err(bad(format!("unknown `padding_encoding` {v}"))),
            },
        };
        if let Some(k) = super::unknown_member(config, &["padding_encoding", "first_bit", "last_bit"]) {
            return Err(bad(format!("unknown configuration member `{k}`")));
        }
        Ok(PackBits {
            padding,
            first_bit,
            bits: last_bit - first_bit + 1,
            component_bits,
            components,
            signed,
        })
    }

    /// The encoded size of `elements` elements.
    pub fn encoded_size(&self, elements: u64) -> Option<usize> {
        let bits = elements.checked_mul(self.components as u64 * u64::from(self.bits))?;
        let pad = u64::from(self.padding != Padding::None);
        usize::try_from(bits.div_ceil(8) + pad).ok()
    }

    /// Decode `elements` elements into native byte order.
    pub fn decode(&self, input: &[u8], elements: usize) -> Result<Vec<u8>, CodecError> {
        let expected = self.encoded_size(elements as u64).ok_or(CodecError::TooLarge {
            codec: NAME,
            limit: usize::MAX,
        })?;
        if input.len() != expected {
            return Err(CodecError::SizeMismatch {
                codec: NAME,
                expected,
                got: input.len(),
            });
        }
        let count = elements * self.components;
        let used = count as u64 * u64::from(self.bits);
        let padding_bits = ((8 - used % 8) % 8) as u8;
        let packed = match self.padding {
            Padding::None => input,
            Padding::FirstByte | Padding::LastByte => {
                let (byte, rest) = match self.padding {
                    Padding::FirstByte => (input[0], &input[1..]),
                    _ => (input[input.len() - 1], &input[..input.len() - 1]),
                };
                if byte != padding_bits {
                    return Err(CodecError::Corrupt {
                        codec: NAME,
                        reason: format!("the padding byte says {byte} bits, the chunk has {padding_bits}"),
                    });
                }
                rest
            }
        };
        let width = self.component_bits.div_ceil(8) as usize;
        let mut out = vec![0u8; count * width];
        let mask = u64::MAX >> (64 - self.bits);
        let full = u64::MAX >> (64 - self.component_bits);
        for (i, dst) in out.chunks_exact_mut(width).enumerate() {
            let at = i as u64 * u64::from(self.bits);
            let byte = (at / 8) as usize;
            // Up to 64 bits starting anywhere in a byte span 9 bytes.
            let mut window = 0u128;
            for (k, &b) in packed[byte..packed.len().min(byte + 9)].iter().enumerate() {
                window |= u128::from(b) << (8 * k);
            }
            let mut value = ((window >> (at % 8)) as u64 & mask) << self.first_bit;
            let top = self.first_bit + self.bits - 1;
            if self.signed && value >> top & 1 == 1 {
                value |= full & !(u64::MAX >> (63 - top));
            }
            match width {
                1 => dst[0] = value as u8,
                2 => dst.copy_from_slice(&(value as u16).to_ne_bytes()),
                4 => dst.copy_from_slice(&(value as u32).to_ne_bytes()),
                _ => dst.copy_from_slice(&value.to_ne_bytes()),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(cfg: &str, dt: &DataType) -> Result<PackBits, MetadataError> {
        PackBits::from_configuration(Some(&parse(cfg.as_bytes()).unwrap()), dt)
    }

    /// Packed by hand from the spec's rules: element i is bits
    /// [i*k, (i+1)*k) of the stream, byte j holds bits [8j, 8j+8), least
    /// significant first.
    #[test]
    fn hand_packed_streams_decode_as_the_spec_says() {
        // Three bools 1, 0, 1: bits 0b101, 5 padding bits, first_byte.
        let c = codec(r#"{"padding_encoding": "first_byte"}"#, &DataType::Bool).unwrap();
        assert_eq!(c.decode(&[5, 0b101], 3).unwrap(), [1, 0, 1]);
        assert!(c.decode(&[4, 0b101], 3).is_err());
        assert!(c.decode(&[5], 3).is_err());
        // int16 values -3, 5, -1 kept as bits 0..=3 (sign-extended from bit 3).
        let c = codec(r#"{"last_bit": 3, "padding_encoding": "last_byte"}"#, &DataType::Int16).unwrap();
        let stream = [0b0101_1101u8, 0b1111, 4];
        let want: Vec<u8> = [-3i16, 5, -1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(c.decode(&stream, 3).unwrap(), want);
        // uint16 bits 4..=9: each 6-bit field shifted back up by 4.
        let c = codec(r#"{"first_bit": 4, "last_bit": 9}"#, &DataType::UInt16).unwrap();
        // fields 0b111111, 0b000001 -> bits 0..6 = 63, bits 6..12 = 1
        let stream = [0b0111_1111u8, 0b0000];
        let want: Vec<u8> = [63u16 << 4, 1 << 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(c.decode(&stream, 2).unwrap(), want);
        // Whole 64-bit components cross byte boundaries unharmed.
        let c = codec("{}", &DataType::Int64).unwrap();
        let v = [-2i64, i64::MAX];
        let stream: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let want: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(c.decode(&stream, 2).unwrap(), want);
    }

    #[test]
    fn bad_configurations_are_refused() {
        for (cfg, dt) in [
            (r#"{"first_bit": 5, "last_bit": 2}"#, DataType::Int16),
            (r#"{"last_bit": 16}"#, DataType::Int16),
            (r#"{"padding_encoding": "middle"}"#, DataType::Int16),
            (r#"{"extra": 1}"#, DataType::Int16),
            ("{}", DataType::String),
        ] {
            assert!(codec(cfg, &dt).is_err(), "{cfg}");
        }
        assert!(codec(r#"{"first_bit": null, "last_bit": null}"#, &DataType::Int8).is_ok());
    }
}
