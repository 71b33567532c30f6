//! numcodecs' `zfpy` and zarr-extensions' `zfp`, decoded with the zfp C
//! library (`zfp-sys-cc`, feature `zfp`).
//!
//! A `numcodecs.zfpy` chunk is what `zfpy.compress_numpy` writes: zfp's
//! full header (field type and dimensions, compression mode), then the
//! compressed blocks. A `zfp` chunk is the blocks alone: the mode comes from
//! the codec's configuration ([`Mode`]) and the field from the chunk. `zfp`
//! also holds int8, int16, uint8 and uint16, promoted to int32 as the
//! registry's README says (`zfp_promote_*`), so they are demoted here.
//!
//! zfp's bit stream reads whole 64-bit words and does no bounds checks, so
//! nzfs never hands it the stored bytes as they are: they are copied into a
//! word-aligned buffer padded with `PAD` zero bytes, the header's bits
//! per block are bounded (a block reads at most `max(minbits, maxbits)`
//! bits, at most 2^15), and the blocks are decoded one at a time, in zfp's
//! own order, each only while the stream has not run past the stored
//! bytes. The header must describe exactly the chunk (type and shape,
//! numpy's last dimension as zfp's x), so the output size comes from the
//! metadata, never from the stream. Invariant: no read outside the padded
//! buffer, no write outside the output.

use super::CodecError;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::MetadataError;

const NAME: &str = "numcodecs.zfpy";
const REGISTRY: &str = "zfp";

/// The compression mode of the registry's `zfp` codec, from its
/// configuration (its chunks carry no header).
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// `reversible`: lossless.
    Reversible,
    /// `fixed_rate`: `rate` bits per value.
    FixedRate(f64),
    /// `fixed_precision`: `precision` bit planes.
    FixedPrecision(u32),
    /// `fixed_accuracy`: absolute error at most `tolerance`.
    FixedAccuracy(f64),
    /// `expert`: zfp's four parameters.
    Expert {
        /// Fewest bits per block.
        minbits: u32,
        /// Most bits per block.
        maxbits: u32,
        /// Most bit planes.
        maxprec: u32,
        /// Smallest exponent kept.
        minexp: i32,
    },
}

impl Mode {
    /// Read the `zfp` codec's configuration.
    pub fn from_configuration(config: Option<&Value>) -> Result<Mode, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: REGISTRY.into(),
            reason,
        };
        let member = |k: &str| config.and_then(|c| c.get(k));
        let uint = |k: &str| {
            member(k)
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| bad(format!("`{k}` must be an unsigned integer")))
        };
        let number = |k: &str| {
            member(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad(format!("`{k}` must be a number, at least 0")))
        };
        let (mode, members): (Mode, &[&str]) = match member("mode").and_then(Value::as_str) {
            Some("reversible") => (Mode::Reversible, &["mode"]),
            Some("fixed_rate") => (Mode::FixedRate(number("rate")?), &["mode", "rate"]),
            Some("fixed_precision") => (Mode::FixedPrecision(uint("precision")?), &["mode", "precision"]),
            Some("fixed_accuracy") => (Mode::FixedAccuracy(number("tolerance")?), &["mode", "tolerance"]),
            Some("expert") => (
                Mode::Expert {
                    minbits: uint("minbits")?,
                    maxbits: uint("maxbits")?,
                    maxprec: uint("maxprec")?,
                    minexp: match member("minexp") {
                        Some(&Value::Int(v)) => i32::try_from(v).ok(),
                        _ => None,
                    }
                    .ok_or_else(|| bad("`minexp` must be an integer".into()))?,
                },
                &["mode", "minbits", "maxbits", "maxprec", "minexp"],
            ),
            _ => {
                return Err(bad(
                    "`mode` must be reversible, fixed_rate, fixed_precision, fixed_accuracy or expert".into(),
                ));
            }
        };
        if let Some(k) = super::unknown_member(config, members) {
            return Err(bad(format!("unknown configuration member `{k}` for this mode")));
        }
        Ok(mode)
    }
}

/// Whether the registry's `zfp` holds elements of `data_type` (what
/// [`supports`] holds, and the 8- and 16-bit integers it promotes).
pub fn registry_supports(data_type: &DataType) -> bool {
    supports(data_type) || promoted_bits(data_type).is_some()
}

/// The 8- and 16-bit integers zfp holds as int32: their bits and sign.
fn promoted_bits(data_type: &DataType) -> Option<(u32, bool)> {
    match data_type {
        DataType::Int8 => Some((8, true)),
        DataType::Int16 => Some((16, true)),
        DataType::UInt8 => Some((8, false)),
        DataType::UInt16 => Some((16, false)),
        _ => None,
    }
}

/// int32 values (native bytes) demoted to `bits`-bit integers, as
/// `zfp_demote_*` does: shifted down, then clamped.
fn demote(values: &[u8], bits: u32, signed: bool) -> Vec<u8> {
    let width = (bits / 8) as usize;
    let half = 1i64 << (bits - 1);
    let mut out = Vec::with_capacity(values.len() / 4 * width);
    for v in values.chunks_exact(4) {
        let v = i64::from(i32::from_ne_bytes([v[0], v[1], v[2], v[3]]) >> (31 - bits));
        let x = if signed {
            v.clamp(-half, half - 1)
        } else {
            (v + half).clamp(0, 2 * half - 1)
        };
        match width {
            1 => out.push(x as u8),
            _ => out.extend_from_slice(&(x as u16).to_ne_bytes()),
        }
    }
    out
}

/// Whether nzfs was built with zfp.
pub const AVAILABLE: bool = cfg!(feature = "zfp");

/// The most bits one block may read, and the zero bytes after the stream
/// that therefore cover any block that starts inside it (plus two words of
/// zfp's read-ahead).
#[cfg(feature = "zfp")]
const MAX_BLOCK_BITS: u32 = 1 << 15;
#[cfg(feature = "zfp")]
const PAD: usize = (MAX_BLOCK_BITS as usize) / 8 + 16;

/// Whether zfp holds elements of `data_type`.
pub fn supports(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Float32 | DataType::Float64 | DataType::Int32 | DataType::Int64
    )
}

/// A reason a stream cannot be decoded (named with its codec by [`decode`]).
struct Corrupt(String);

fn corrupt(reason: impl Into<String>) -> Corrupt {
    Corrupt(reason.into())
}

/// Decode one chunk of `shape` (C order) and `data_type` into native
/// bytes: a `numcodecs.zfpy` chunk (`mode` `None`: the stream's header
/// says it), or a `zfp` one of that mode.
pub fn decode(input: &[u8], data_type: &DataType, shape: &[u64], mode: Option<&Mode>) -> Result<Vec<u8>, CodecError> {
    let codec = if mode.is_some() { REGISTRY } else { NAME };
    let err = |Corrupt(reason)| CodecError::Corrupt { codec, reason };
    let Some(m) = mode else {
        return decode_stream(input, data_type, shape, None).map_err(err);
    };
    // The registry's zfp: a 0-d chunk is a 1-d field of one value, and
    // the small integers are int32s in the stream.
    let one = [1u64];
    let shape = if shape.is_empty() { &one[..] } else { shape };
    match promoted_bits(data_type) {
        None => decode_stream(input, data_type, shape, Some(m)).map_err(err),
        Some((bits, signed)) => {
            let wide = decode_stream(input, &DataType::Int32, shape, Some(m)).map_err(err)?;
            Ok(demote(&wide, bits, signed))
        }
    }
}

#[cfg(not(feature = "zfp"))]
fn decode_stream(
    _input: &[u8],
    _data_type: &DataType,
    _shape: &[u64],
    _mode: Option<&Mode>,
) -> Result<Vec<u8>, Corrupt> {
    Err(corrupt("this nzfs was built without the zfp feature"))
}

#[cfg(feature = "zfp")]
fn decode_stream(input: &[u8], data_type: &DataType, shape: &[u64], mode: Option<&Mode>) -> Result<Vec<u8>, Corrupt> {
    use zfp_sys_cc as z;
    let (ztype, size) = match data_type {
        DataType::Float32 => (z::zfp_type_zfp_type_float, 4),
        DataType::Float64 => (z::zfp_type_zfp_type_double, 8),
        DataType::Int32 => (z::zfp_type_zfp_type_int32, 4),
        DataType::Int64 => (z::zfp_type_zfp_type_int64, 8),
        other => return Err(corrupt(format!("zfp holds no {}", other.name()))),
    };
    if shape.is_empty() || shape.len() > 4 {
        return Err(corrupt(format!("zfp holds 1 to 4 dimensions, not {}", shape.len())));
    }
    // zfp's x is numpy's last dimension; unused dimensions are 0 in a header.
    let mut dims = [0usize; 4];
    for (d, &n) in shape.iter().rev().enumerate() {
        dims[d] = usize::try_from(n).map_err(|_| corrupt("dimension too large"))?;
    }
    let elements: usize = dims[..shape.len()].iter().product();
    if elements == 0 {
        return Ok(Vec::new());
    }
    // The stream in aligned words, zero-padded.
    let words = (input.len() + PAD).div_ceil(8);
    let mut stream = vec![0u64; words];
    for (w, piece) in stream.iter_mut().zip(input.chunks(8)) {
        let mut b = [0u8; 8];
        b[..piece.len()].copy_from_slice(piece);
        *w = u64::from_ne_bytes(b);
    }
    let end_bits = input.len() as u64 * 8;
    let mut out = vec![0u64; (elements * size).div_ceil(8)];

    /// Frees what zfp allocated, whatever happens.
    struct Handles(*mut z::bitstream, *mut z::zfp_stream, *mut z::zfp_field);
    impl Drop for Handles {
        fn drop(&mut self) {
            // SAFETY: each pointer is null or came from its zfp allocator,
            // and is freed once, here.
            unsafe {
                if !self.2.is_null() {
                    z::zfp_field_free(self.2);
                }
                if !self.1.is_null() {
                    z::zfp_stream_close(self.1);
                }
                if !self.0.is_null() {
                    z::stream_close(self.0);
                }
            }
        }
    }
    // SAFETY: `stream` outlives the handles (dropped first, at the end of
    // this block); zfp reads it only through the block decoders below, each
    // started at a bit inside the stored bytes and reading at most
    // MAX_BLOCK_BITS, which the padding covers; the decoders write only
    // inside `out`, as the block origins and partial extents are computed
    // from `dims`, which the header was checked to equal.
    unsafe {
        let mut h = Handles(std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        h.0 = z::stream_open(stream.as_mut_ptr().cast(), words * 8);
        if !h.0.is_null() {
            h.1 = z::zfp_stream_open(h.0);
            h.2 = z::zfp_field_alloc();
        }
        let (bs, zs, field) = (h.0, h.1, h.2);
        if bs.is_null() || zs.is_null() || field.is_null() {
            return Err(corrupt("zfp could not allocate its stream"));
        }
        match mode {
            None => {
                if z::zfp_read_header(zs, field, z::ZFP_HEADER_FULL) == 0 || z::stream_rtell(bs) > end_bits {
                    return Err(corrupt("no zfp header (numcodecs' zfpy writes a full one)"));
                }
                let f = &*field;
                if f.type_ != ztype {
                    return Err(corrupt(format!(
                        "the stream holds zfp type {}, the array {}",
                        f.type_,
                        data_type.name()
                    )));
                }
                if [f.nx, f.ny, f.nz, f.nw] != dims {
                    return Err(corrupt(format!(
                        "the stream's field is {:?}, the chunk {:?} (zfp order)",
                        [f.nx, f.ny, f.nz, f.nw],
                        dims
                    )));
                }
            }
            Some(Mode::Reversible) => z::zfp_stream_set_reversible(zs),
            Some(&Mode::FixedRate(rate)) => {
                z::zfp_stream_set_rate(zs, rate, ztype, shape.len() as u32, 0);
            }
            Some(&Mode::FixedPrecision(precision)) => {
                z::zfp_stream_set_precision(zs, precision);
            }
            Some(&Mode::FixedAccuracy(tolerance)) => {
                z::zfp_stream_set_accuracy(zs, tolerance);
            }
            Some(&Mode::Expert {
                minbits,
                maxbits,
                maxprec,
                minexp,
            }) => {
                if z::zfp_stream_set_params(zs, minbits, maxbits, maxprec, minexp) == 0 {
                    return Err(corrupt("zfp refuses the expert parameters"));
                }
            }
        }
        let s = &*zs;
        if s.maxbits.max(s.minbits) > MAX_BLOCK_BITS {
            return Err(corrupt(format!(
                "{} bits per block is more than zfp writes",
                s.maxbits.max(s.minbits)
            )));
        }
        let nd = shape.len();
        let n = |d: usize| if d < nd { dims[d] } else { 1 };
        let stride = [1, dims[0], dims[0] * n(1), dims[0] * n(1) * n(2)].map(|s| s as isize);
        let base = out.as_mut_ptr().cast::<u8>();
        for w in (0..n(3)).step_by(4) {
            for zz in (0..n(2)).step_by(4) {
                for y in (0..n(1)).step_by(4) {
                    for x in (0..n(0)).step_by(4) {
                        if z::stream_rtell(bs) > end_bits {
                            return Err(corrupt("the stream ends before its last block"));
                        }
                        let at = x as isize + y as isize * stride[1] + zz as isize * stride[2] + w as isize * stride[3];
                        let p = base.offset(at * size as isize);
                        let b = [
                            (n(0) - x).min(4),
                            (n(1) - y).min(4),
                            (n(2) - zz).min(4),
                            (n(3) - w).min(4),
                        ];
                        let partial = b[..nd].iter().any(|&e| e < 4);
                        block(zs, ztype, p, nd, partial, b, stride);
                    }
                }
            }
        }
        if z::stream_rtell(bs) > end_bits {
            return Err(corrupt("the stream ends before its last block"));
        }
    }
    let mut bytes = Vec::with_capacity(elements * size);
    for w in &out {
        bytes.extend_from_slice(&w.to_ne_bytes());
    }
    bytes.truncate(elements * size);
    Ok(bytes)
}

/// Decode one block at `p` with zfp's decoder for its type, dimensions and
/// completeness.
///
/// # Safety
/// `zs` is an open zfp stream; `p` and the `b`-extent block at strides
/// `s` lie inside one output buffer of elements of `ztype`.
#[cfg(feature = "zfp")]
unsafe fn block(
    zs: *mut zfp_sys_cc::zfp_stream,
    ztype: zfp_sys_cc::zfp_type,
    p: *mut u8,
    nd: usize,
    partial: bool,
    b: [usize; 4],
    s: [isize; 4],
) {
    use zfp_sys_cc as z;
    macro_rules! by_dims {
        ($t:ty, $f1:ident, $f2:ident, $f3:ident, $f4:ident, $p1:ident, $p2:ident, $p3:ident, $p4:ident) => {{
            let p = p.cast::<$t>();
            // SAFETY: as the function's contract.
            unsafe {
                match (nd, partial) {
                    (1, false) => z::$f1(zs, p, s[0]),
                    (1, true) => z::$p1(zs, p, b[0], s[0]),
                    (2, false) => z::$f2(zs, p, s[0], s[1]),
                    (2, true) => z::$p2(zs, p, b[0], b[1], s[0], s[1]),
                    (3, false) => z::$f3(zs, p, s[0], s[1], s[2]),
                    (3, true) => z::$p3(zs, p, b[0], b[1], b[2], s[0], s[1], s[2]),
                    (_, false) => z::$f4(zs, p, s[0], s[1], s[2], s[3]),
                    (_, true) => z::$p4(zs, p, b[0], b[1], b[2], b[3], s[0], s[1], s[2], s[3]),
                }
            }
        }};
    }
    match ztype {
        z::zfp_type_zfp_type_float => by_dims!(
            f32,
            zfp_decode_block_strided_float_1,
            zfp_decode_block_strided_float_2,
            zfp_decode_block_strided_float_3,
            zfp_decode_block_strided_float_4,
            zfp_decode_partial_block_strided_float_1,
            zfp_decode_partial_block_strided_float_2,
            zfp_decode_partial_block_strided_float_3,
            zfp_decode_partial_block_strided_float_4
        ),
        z::zfp_type_zfp_type_double => by_dims!(
            f64,
            zfp_decode_block_strided_double_1,
            zfp_decode_block_strided_double_2,
            zfp_decode_block_strided_double_3,
            zfp_decode_block_strided_double_4,
            zfp_decode_partial_block_strided_double_1,
            zfp_decode_partial_block_strided_double_2,
            zfp_decode_partial_block_strided_double_3,
            zfp_decode_partial_block_strided_double_4
        ),
        z::zfp_type_zfp_type_int32 => by_dims!(
            i32,
            zfp_decode_block_strided_int32_1,
            zfp_decode_block_strided_int32_2,
            zfp_decode_block_strided_int32_3,
            zfp_decode_block_strided_int32_4,
            zfp_decode_partial_block_strided_int32_1,
            zfp_decode_partial_block_strided_int32_2,
            zfp_decode_partial_block_strided_int32_3,
            zfp_decode_partial_block_strided_int32_4
        ),
        _ => by_dims!(
            i64,
            zfp_decode_block_strided_int64_1,
            zfp_decode_block_strided_int64_2,
            zfp_decode_block_strided_int64_3,
            zfp_decode_block_strided_int64_4,
            zfp_decode_partial_block_strided_int64_1,
            zfp_decode_partial_block_strided_int64_2,
            zfp_decode_partial_block_strided_int64_3,
            zfp_decode_partial_block_strided_int64_4
        ),
    };
}

#[cfg(all(test, feature = "zfp"))]
mod tests {
    use super::*;

    /// Corrupt and hostile streams give errors: truncations of a real
    /// stream at every length, a wrong shape or type, garbage.
    #[test]
    fn broken_streams_are_errors() {
        // A zfpy stream of np.arange(16.).reshape(4, 4) (fixed accuracy),
        // from tests/data/formats_2026.zarr's writer.
        let good = include_bytes!("../../tests/data/zfp_arange16.bin");
        let values = decode(good, &DataType::Float64, &[4, 4], None).unwrap();
        assert_eq!(values.len(), 128);
        // Cut anywhere: an error, or (when only the zero bits that pad the
        // stream to a word are lost) the same values; never a crash.
        for cut in 0..good.len() {
            match decode(&good[..cut], &DataType::Float64, &[4, 4], None) {
                Ok(v) => assert!(v == values && cut + 8 > good.len(), "cut at {cut}"),
                Err(_) => assert!(cut < good.len()),
            }
        }
        assert!(decode(&good[..good.len() / 2], &DataType::Float64, &[4, 4], None).is_err());
        assert!(decode(good, &DataType::Float64, &[2, 8], None).is_err());
        assert!(decode(good, &DataType::Float32, &[4, 4], None).is_err());
        assert!(decode(&[0xff; 64], &DataType::Float64, &[4, 4], None).is_err());
    }

    /// The registry's headerless zfp: its modes from their configuration,
    /// and a real chunk cut anywhere is an error or the same values.
    #[test]
    fn headerless_streams_take_their_mode_from_the_configuration() {
        let mode = |cfg: &str| Mode::from_configuration(Some(&crate::json::parse(cfg.as_bytes()).unwrap()));
        let rate = mode(r#"{"mode": "fixed_rate", "rate": 12}"#).unwrap();
        assert_eq!(rate, Mode::FixedRate(12.0));
        for bad in [
            r#"{"mode": "fixed_rate"}"#,
            r#"{"mode": "fixed_rate", "rate": -1}"#,
            r#"{"mode": "fixed_precision", "precision": 1.5}"#,
            r#"{"mode": "expert", "minbits": 1, "maxbits": 2, "maxprec": 3}"#,
            r#"{"mode": "reversible", "rate": 3}"#,
            r#"{"mode": 4}"#,
        ] {
            assert!(mode(bad).is_err(), "{bad}");
        }
        // A chunk of formats_2026.zarr's zfpx_float64_rate (5 x 3 x 7).
        let good = include_bytes!("../../tests/data/formats_2026.zarr/zfpx_float64_rate/c/0/0/0");
        let values = decode(good, &DataType::Float64, &[5, 3, 7], Some(&rate)).unwrap();
        assert_eq!(values.len(), 5 * 3 * 7 * 8);
        for cut in 0..good.len() {
            match decode(&good[..cut], &DataType::Float64, &[5, 3, 7], Some(&rate)) {
                Ok(v) => assert!(v == values && cut + 8 > good.len(), "cut at {cut}"),
                Err(_) => assert!(cut < good.len()),
            }
        }
        // A rate past what a block may read is refused, not followed.
        let wide = Mode::FixedRate(1e6);
        assert!(decode(good, &DataType::Float64, &[5, 3, 7], Some(&wide)).is_err());
        let expert = Mode::Expert {
            minbits: 1 << 20,
            maxbits: 1 << 20,
            maxprec: 64,
            minexp: -1074,
        };
        assert!(decode(good, &DataType::Float64, &[5, 3, 7], Some(&expert)).is_err());
        // The registry's demotion: int32 0x7fff_ffff is int8 127, uint8 255.
        let top = i32::MAX.to_ne_bytes();
        assert_eq!(demote(&top, 8, true), [127]);
        assert_eq!(demote(&top, 8, false), [255]);
        assert_eq!(demote(&i32::MIN.to_ne_bytes(), 16, false), 0u16.to_ne_bytes());
    }
}
