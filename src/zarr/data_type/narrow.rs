//! The registry's types narrower than any classic netCDF type: `int2`,
//! `int4`, `uint2`, `uint4`, the 4-, 6- and 8-bit floats, and the complex
//! forms of those and of `float16` and `bfloat16`.
//!
//! A [`Narrow`] is stored one component per byte (two bytes for a
//! `float16`/`bfloat16` component; fewer bits under `packbits`), and shown
//! widened to the smallest classic type that holds every value exactly:
//! the integers as `int8` (netCDF `byte`: `uint4`'s 0..=15 fit), the
//! floats as `float32`, the complex forms as `complex64`. The codec chain
//! decodes the stored form ([`super::DataType::Narrow`]); the array widens
//! each decoded chunk whole ([`Narrow::widen`]), so every file shows the
//! widened values and no file shows the stored bits.
//!
//! `bfloat16` is widened the same way ([`Narrow::BFLOAT16`]): its arrays'
//! metadata names it, though the parser keeps [`super::DataType::BFloat16`].
//!
//! Invariants: widening is exact (every value of every narrow type is a
//! float32); a stored component's unused high bits are ignored, as the
//! registry says; the integers are sign-extended from their top bit.

use super::{DataType, FillValue};
use crate::json::Value;

/// How a small float spends its special codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// IEEE 754: the top exponent is infinity (mantissa 0) or NaN.
    Ieee,
    /// `fn`: no infinity; NaN is the top exponent with every mantissa bit set.
    Fn,
    /// `fnuz`: no infinity, no negative zero; NaN is the sign bit alone.
    Fnuz,
    /// `fn` for 4- and 6-bit floats: every code is a finite value.
    Finite,
    /// `e8m0fnu`: no sign, no mantissa; NaN is all ones.
    E8m0,
}

/// A float of 4, 6 or 8 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiniFloat {
    bits: u32,
    exponent: u32,
    mantissa: u32,
    bias: i32,
    specials: Specials,
}

impl MiniFloat {
    const fn new(bits: u32, exponent: u32, mantissa: u32, bias: i32, specials: Specials) -> Self {
        MiniFloat {
            bits,
            exponent,
            mantissa,
            bias,
            specials,
        }
    }

    /// The value of stored code `code` (its bits above `bits` ignored).
    pub fn value(self, code: u8) -> f32 {
        let code = u32::from(code) & ((1 << self.bits) - 1);
        if self.specials == Specials::E8m0 {
            return if code == 0xff {
                f32::NAN
            } else {
                (2f64.powi(code as i32 - self.bias)) as f32
            };
        }
        let top_exponent = (1 << self.exponent) - 1;
        let negative = code >> (self.bits - 1) & 1 == 1;
        let e = (code >> self.mantissa) & top_exponent;
        let m = code & ((1 << self.mantissa) - 1);
        match self.specials {
            Specials::Ieee if e == top_exponent => {
                let x = if m == 0 { f32::INFINITY } else { f32::NAN };
                return if negative { -x } else { x };
            }
            Specials::Fn if e == top_exponent && m == (1 << self.mantissa) - 1 => {
                return if negative { -f32::NAN } else { f32::NAN };
            }
            // NaN keeps its code's sign bit, as ml_dtypes widens it.
            Specials::Fnuz if code == 1 << (self.bits - 1) => return -f32::NAN,
            _ => {}
        }
        let magnitude = if e == 0 {
            f64::from(m) * 2f64.powi(1 - self.bias - self.mantissa as i32)
        } else {
            (1.0 + f64::from(m) / f64::from(1u32 << self.mantissa)) * 2f64.powi(e as i32 - self.bias)
        };
        (if negative { -magnitude } else { magnitude }) as f32
    }

    /// The code of NaN, where the type has one (a quiet NaN, sign clear,
    /// as the registry spells each type's `"NaN"`).
    fn nan(self) -> Option<u8> {
        let top = (1u32 << self.exponent) - 1;
        match self.specials {
            Specials::Ieee => Some(((top << self.mantissa) | 1 << (self.mantissa - 1)) as u8),
            Specials::Fn => Some(((1u32 << (self.bits - 1)) - 1) as u8),
            Specials::Fnuz => Some((1u32 << (self.bits - 1)) as u8),
            Specials::E8m0 => Some(0xff),
            Specials::Finite => None,
        }
    }

    /// The code of `x`: exact when `x` is a value of the type, else the
    /// nearest finite one (ties to the lower code); `None` for NaN or an
    /// infinity the type cannot hold.
    fn code_of(self, x: f64) -> Option<u8> {
        if x.is_nan() {
            return self.nan();
        }
        let codes = 0..(1u32 << self.bits);
        if x.is_infinite() {
            return codes.map(|c| c as u8).find(|&c| f64::from(self.value(c)) == x);
        }
        codes
            .map(|c| c as u8)
            .filter(|&c| self.value(c).is_finite())
            .min_by(|&a, &b| {
                let da = (f64::from(self.value(a)) - x).abs();
                let db = (f64::from(self.value(b)) - x).abs();
                da.total_cmp(&db)
            })
    }
}

/// One component of a narrow type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// An integer of `bits` bits (2 or 4), signed or not.
    Int {
        /// Its width.
        bits: u32,
        /// Whether it is sign-extended.
        signed: bool,
    },
    /// A 4-, 6- or 8-bit float.
    Float(MiniFloat),
    /// `float16` (only as a complex component).
    Half,
    /// `bfloat16` (a complex component, or [`Narrow::BFLOAT16`] itself).
    BHalf,
}

impl Component {
    /// Bits of the component as the registry counts them (`packbits`' N).
    pub fn bits(self) -> u32 {
        match self {
            Component::Int { bits, .. } => bits,
            Component::Float(f) => f.bits,
            Component::Half | Component::BHalf => 16,
        }
    }

    /// Whether `packbits` sign-extends it.
    pub fn signed(self) -> bool {
        matches!(self, Component::Int { signed: true, .. })
    }

    /// Bytes of one stored component.
    fn stored_size(self) -> usize {
        self.bits().div_ceil(8) as usize
    }
}

/// A type stored narrower than it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Narrow {
    name: &'static str,
    component: Component,
    complex: bool,
}

/// The registry's names of the narrow real types, and what each is.
const REAL: [(&str, Component); 15] = [
    ("int2", Component::Int { bits: 2, signed: true }),
    ("int4", Component::Int { bits: 4, signed: true }),
    ("uint2", Component::Int { bits: 2, signed: false }),
    ("uint4", Component::Int { bits: 4, signed: false }),
    (
        "float4_e2m1fn",
        Component::Float(MiniFloat::new(4, 2, 1, 1, Specials::Finite)),
    ),
    (
        "float6_e2m3fn",
        Component::Float(MiniFloat::new(6, 2, 3, 1, Specials::Finite)),
    ),
    (
        "float6_e3m2fn",
        Component::Float(MiniFloat::new(6, 3, 2, 3, Specials::Finite)),
    ),
    (
        "float8_e3m4",
        Component::Float(MiniFloat::new(8, 3, 4, 3, Specials::Ieee)),
    ),
    (
        "float8_e4m3",
        Component::Float(MiniFloat::new(8, 4, 3, 7, Specials::Ieee)),
    ),
    // tensorstore and ml_dtypes write it (JAX's and Orbax's float8), though
    // the registry of 2026-07-14 does not list it.
    (
        "float8_e4m3fn",
        Component::Float(MiniFloat::new(8, 4, 3, 7, Specials::Fn)),
    ),
    (
        "float8_e4m3fnuz",
        Component::Float(MiniFloat::new(8, 4, 3, 8, Specials::Fnuz)),
    ),
    (
        "float8_e4m3b11fnuz",
        Component::Float(MiniFloat::new(8, 4, 3, 11, Specials::Fnuz)),
    ),
    (
        "float8_e5m2",
        Component::Float(MiniFloat::new(8, 5, 2, 15, Specials::Ieee)),
    ),
    (
        "float8_e5m2fnuz",
        Component::Float(MiniFloat::new(8, 5, 2, 16, Specials::Fnuz)),
    ),
    (
        "float8_e8m0fnu",
        Component::Float(MiniFloat::new(8, 8, 0, 127, Specials::E8m0)),
    ),
];

/// The registry's complex forms whose components are not classic types.
const COMPLEX: [(&str, Component); 2] = [
    ("complex_float16", Component::Half),
    ("complex_bfloat16", Component::BHalf),
];

impl Narrow {
    /// `bfloat16` as an array stores it: 16-bit halves widened to float32.
    /// Not found by [`Narrow::parse`] (the parser keeps
    /// [`DataType::BFloat16`], which records hold as 2 bytes); the array
    /// metadata names it, so that bfloat16 is widened by the same code.
    pub const BFLOAT16: Narrow = Narrow {
        name: "bfloat16",
        component: Component::BHalf,
        complex: false,
    };

    /// The narrow type named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Narrow> {
        if let Some((name, component)) = REAL.iter().find(|(n, _)| *n == name) {
            return Some(Narrow {
                name,
                component: *component,
                complex: false,
            });
        }
        if let Some((name, component)) = COMPLEX.iter().find(|(n, _)| *n == name) {
            return Some(Narrow {
                name,
                component: *component,
                complex: true,
            });
        }
        let real = name.strip_prefix("complex_")?;
        let (_, component) = REAL
            .iter()
            .find(|(n, c)| *n == real && matches!(c, Component::Float(_)))?;
        // The static name of the complex form: kept beside the real one.
        let name = COMPLEX_NAMES.iter().find(|n| **n == name)?;
        Some(Narrow {
            name,
            component: *component,
            complex: true,
        })
    }

    /// The spec's identifier.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// Its component.
    pub fn component(self) -> Component {
        self.component
    }

    /// Components per element (2 for a complex form).
    pub fn components(self) -> usize {
        if self.complex { 2 } else { 1 }
    }

    /// Bytes of one stored element (what the `bytes` codec reads).
    pub fn stored_size(self) -> usize {
        self.component.stored_size() * self.components()
    }

    /// Bytes that byte order applies to in a stored element.
    pub fn swap_unit(self) -> usize {
        self.component.stored_size()
    }

    /// The element type its codec chain decodes: the stored form, except
    /// for bfloat16, whose codecs see its halves as `uint16` (which the
    /// numcodecs filters and the other codecs hold).
    pub fn chain_type(self) -> DataType {
        match (self.component, self.complex) {
            (Component::BHalf, false) => DataType::UInt16,
            _ => DataType::Narrow(self),
        }
    }

    /// The type every file shows: `int8`, `float32` or `complex64`.
    pub fn shown(self) -> DataType {
        match (self.component, self.complex) {
            (_, true) => DataType::Complex64,
            (Component::Int { .. }, false) => DataType::Int8,
            _ => DataType::Float32,
        }
    }

    /// Stored elements (native byte order), widened to [`Narrow::shown`].
    pub fn widen(self, stored: &[u8]) -> Vec<u8> {
        let unit = self.component.stored_size();
        match self.component {
            Component::Int { bits, signed } => stored
                .iter()
                .map(|&b| {
                    let shift = 8 - bits;
                    if signed {
                        (((b << shift) as i8) >> shift) as u8
                    } else {
                        b & ((1 << bits) - 1)
                    }
                })
                .collect(),
            Component::Float(f) => {
                let table: Vec<[u8; 4]> = (0..=255u8).map(|c| f.value(c).to_ne_bytes()).collect();
                stored.iter().flat_map(|&c| table[usize::from(c)]).collect()
            }
            Component::Half => stored
                .chunks_exact(unit)
                .flat_map(|h| half::f16::from_ne_bytes([h[0], h[1]]).to_f32().to_ne_bytes())
                .collect(),
            Component::BHalf => stored
                .chunks_exact(unit)
                .flat_map(|h| f32::from_bits(u32::from(u16::from_ne_bytes([h[0], h[1]])) << 16).to_ne_bytes())
                .collect(),
        }
    }

    /// The fill value `v` as one shown element (native byte order), or
    /// `None` when it is not a value of the type.
    pub fn fill_value(self, v: &Value) -> Option<FillValue> {
        let parts: Vec<&Value> = match (self.complex, v) {
            (false, v) => vec![v],
            (true, Value::Array(pair)) if pair.len() == 2 => pair.iter().collect(),
            _ => return None,
        };
        let mut out = Vec::new();
        for part in parts {
            let code = self.component_code(part)?;
            out.extend(self.widen(&code));
        }
        Some(FillValue(out))
    }

    /// One component of a fill value as its stored bytes.
    fn component_code(self, v: &Value) -> Option<Vec<u8>> {
        let hex = match v {
            Value::Str(s) if s.starts_with("0x") || s.starts_with("0X") => {
                let digits = &s[2..];
                let width = self.component.bits().div_ceil(4) as usize;
                if digits.is_empty() || digits.len() > width || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                Some(u32::from_str_radix(digits, 16).ok()?).filter(|&b| b < 1 << self.component.bits())
            }
            _ => None,
        };
        let number = || -> Option<f64> {
            match v {
                Value::Str(s) => match s.as_str() {
                    "NaN" => Some(f64::NAN),
                    "Infinity" => Some(f64::INFINITY),
                    "-Infinity" => Some(f64::NEG_INFINITY),
                    _ => None,
                },
                other => other.as_f64(),
            }
        };
        Some(match self.component {
            Component::Int { bits, signed } => {
                let x = number()?;
                let (lo, hi) = if signed {
                    (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
                } else {
                    (0, (1i64 << bits) - 1)
                };
                if x.fract() != 0.0 || x < lo as f64 || x > hi as f64 {
                    return None;
                }
                vec![(x as i64 as u8) & ((1 << bits) - 1)]
            }
            Component::Float(f) => vec![match hex {
                Some(b) => b as u8,
                None => f.code_of(number()?)?,
            }],
            Component::Half => match hex {
                Some(b) => (b as u16).to_ne_bytes().to_vec(),
                None => {
                    let x = number()?;
                    let h = if x.is_nan() {
                        half::f16::from_bits(0x7e00)
                    } else {
                        half::f16::from_f64(x)
                    };
                    h.to_ne_bytes().to_vec()
                }
            },
            Component::BHalf => match hex {
                Some(b) => (b as u16).to_ne_bytes().to_vec(),
                None => {
                    let x = number()?;
                    let h = if x.is_nan() {
                        half::bf16::from_bits(0x7fc0)
                    } else {
                        half::bf16::from_f64(x)
                    };
                    h.to_ne_bytes().to_vec()
                }
            },
        })
    }

    /// The stored element of shown element `shown` (what the codec chain
    /// fills an absent inner chunk with), or `None` when `shown` is not
    /// the widening of any stored element.
    pub fn narrow_fill(self, shown: &FillValue) -> Option<FillValue> {
        let width = self.shown().size() / self.components();
        let mut out = Vec::new();
        for part in shown.0.chunks_exact(width) {
            match self.component {
                Component::Int { bits, .. } => out.push(part[0] & ((1 << bits) - 1)),
                Component::Float(f) => {
                    let x = f32::from_ne_bytes(part.try_into().ok()?);
                    let code = (0..1u32 << f.bits).map(|c| c as u8).find(|&c| {
                        let y = f.value(c);
                        y.to_bits() == x.to_bits() || (x.is_nan() && y.is_nan())
                    })?;
                    out.push(code);
                }
                Component::Half => {
                    let x = f32::from_ne_bytes(part.try_into().ok()?);
                    out.extend(half::f16::from_f32(x).to_ne_bytes());
                }
                Component::BHalf => {
                    let x = f32::from_ne_bytes(part.try_into().ok()?);
                    out.extend(((x.to_bits() >> 16) as u16).to_ne_bytes());
                }
            }
        }
        (out.len() == self.stored_size()).then_some(FillValue(out))
    }
}

/// The names of the complex forms of the small floats.
const COMPLEX_NAMES: [&str; 11] = [
    "complex_float4_e2m1fn",
    "complex_float6_e2m3fn",
    "complex_float6_e3m2fn",
    "complex_float8_e3m4",
    "complex_float8_e4m3",
    "complex_float8_e4m3fn",
    "complex_float8_e4m3fnuz",
    "complex_float8_e4m3b11fnuz",
    "complex_float8_e5m2",
    "complex_float8_e5m2fnuz",
    "complex_float8_e8m0fnu",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn float(name: &str) -> MiniFloat {
        match Narrow::parse(name).unwrap().component {
            Component::Float(f) => f,
            other => panic!("{other:?}"),
        }
    }

    /// Values from each format's definition (the registry's README and
    /// the OCP MX specification), computed by hand, not by the code.
    #[test]
    fn each_small_float_decodes_as_its_definition_says() {
        let e4m3fn = float("float8_e4m3fn");
        assert_eq!(e4m3fn.value(0x7e), 448.0); // largest finite
        assert!(e4m3fn.value(0x7f).is_nan());
        assert_eq!(e4m3fn.value(0x78), 256.0); // no infinity at the top exponent
        assert_eq!(e4m3fn.value(0x01), 2f32.powi(-9)); // smallest subnormal
        assert_eq!(e4m3fn.value(0xb8), -1.0);
        let e4m3 = float("float8_e4m3");
        assert_eq!(e4m3.value(0x78), f32::INFINITY);
        assert!(e4m3.value(0x7c).is_nan());
        assert_eq!(e4m3.value(0x77), 240.0);
        let e5m2 = float("float8_e5m2");
        assert_eq!(e5m2.value(0x7b), 57344.0);
        assert_eq!(e5m2.value(0x7c), f32::INFINITY);
        assert!(e5m2.value(0x7e).is_nan());
        let fnuz = float("float8_e4m3fnuz");
        assert!(fnuz.value(0x80).is_nan());
        assert_eq!(fnuz.value(0x7f), 240.0);
        assert_eq!(float("float8_e4m3b11fnuz").value(0x7f), 30.0);
        assert_eq!(float("float8_e5m2fnuz").value(0x7f), 57344.0);
        assert_eq!(float("float8_e3m4").value(0x6f), 15.5);
        let e8m0 = float("float8_e8m0fnu");
        assert_eq!(e8m0.value(127), 1.0);
        assert_eq!(e8m0.value(0), 2f32.powi(-127));
        assert!(e8m0.value(0xff).is_nan());
        let fp4 = float("float4_e2m1fn");
        let all: Vec<f32> = (0..16).map(|c| fp4.value(c)).collect();
        assert_eq!(
            all,
            [
                0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0
            ]
        );
        // The upper bits of a stored byte are ignored.
        assert_eq!(fp4.value(0xf7), 6.0);
        assert_eq!(float("float6_e2m3fn").value(0x1f), 7.5);
        assert_eq!(float("float6_e3m2fn").value(0x1f), 28.0);
    }

    #[test]
    fn integers_are_sign_extended_and_masked() {
        let int4 = Narrow::parse("int4").unwrap();
        assert_eq!(int4.widen(&[0x08, 0x0f, 0x07, 0xf3]), [0xf8, 0xff, 0x07, 0x03]);
        let uint2 = Narrow::parse("uint2").unwrap();
        assert_eq!(uint2.widen(&[0x03, 0xfe]), [3, 2]);
        let int2 = Narrow::parse("int2").unwrap();
        assert_eq!(int2.widen(&[2, 3, 1]), [0xfe, 0xff, 1]);
        assert_eq!(int2.shown(), DataType::Int8);
        assert!(int4.fill_value(&Value::Int(8)).is_none());
        assert_eq!(int4.fill_value(&Value::Int(-8)).unwrap().0, [0xf8]);
        assert_eq!(int4.narrow_fill(&FillValue(vec![0xf8])).unwrap().0, [0x08]);
    }

    #[test]
    fn fill_values_take_the_registry_spellings() {
        let e4m3fn = Narrow::parse("float8_e4m3fn").unwrap();
        let nan = e4m3fn.fill_value(&Value::Str("NaN".into())).unwrap();
        assert!(f32::from_ne_bytes(nan.0[..].try_into().unwrap()).is_nan());
        assert_eq!(e4m3fn.narrow_fill(&nan).unwrap().0, [0x7f]);
        assert!(e4m3fn.fill_value(&Value::Str("Infinity".into())).is_none());
        let one = e4m3fn.fill_value(&Value::Str("0x38".into())).unwrap();
        assert_eq!(one.0, 1f32.to_ne_bytes());
        assert_eq!(e4m3fn.fill_value(&Value::Float(-1.0)).unwrap().0, (-1f32).to_ne_bytes());
        assert!(e4m3fn.fill_value(&Value::Str("0x380".into())).is_none());
        let fp4 = Narrow::parse("float4_e2m1fn").unwrap();
        assert!(fp4.fill_value(&Value::Str("NaN".into())).is_none());
        let c = Narrow::parse("complex_float8_e5m2").unwrap();
        assert_eq!(c.shown(), DataType::Complex64);
        assert_eq!(c.stored_size(), 2);
        let pair = c
            .fill_value(&Value::Array(vec![Value::Float(1.5), Value::Str("-Infinity".into())]))
            .unwrap();
        let want: Vec<u8> = [1.5f32, f32::NEG_INFINITY]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        assert_eq!(pair.0, want);
        assert_eq!(c.narrow_fill(&pair).unwrap().0, [0x3e, 0xfc]);
        let h = Narrow::parse("complex_bfloat16").unwrap();
        assert_eq!(h.stored_size(), 4);
        assert_eq!(h.swap_unit(), 2);
        assert!(Narrow::parse("complex_int4").is_none());
        assert!(Narrow::parse("float8").is_none());
    }
}
