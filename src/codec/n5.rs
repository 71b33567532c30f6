//! `n5_default` (zarr-extensions `codecs/n5_default`): an `array -> bytes`
//! codec that reads N5 blocks in "default" mode.
//!
//! The Zarr array takes N5's axes in N5's order (`dimensions`, the fastest
//! first, is the Zarr `shape`; a block `x/y` is chunk key `x/y`), so a block
//! holds its elements in F order, which the nested full transpose undoes.
//! A block is a big-endian header (mode `u16`, dimension count `u16`, one
//! `u32` per dimension) and then the block's elements through the nested
//! codecs: the transpose, `bytes` (big-endian), and at most one
//! `bytes -> bytes` codec. The header's shape
//! may be smaller than the chunk (Java's N5 truncates edge blocks; zarr 2.x
//! and tensorstore pad them): the decoded block is placed at the chunk's
//! origin and the rest is the fill value.
//!
//! Invariants: only mode 0 is read; a header whose dimension count is not
//! the chunk's, or whose shape passes the chunk's along any axis, is corrupt
//! data (so nothing is allocated past the chunk's size); the nested codecs
//! are checked when the array is opened, whatever shape a block claims.

use super::CodecChain;
use super::CodecError;
use crate::json::Value;
use crate::zarr::data_type::{DataType, FillValue};
use crate::zarr::metadata::{CodecSpec, MetadataError};

/// `n5_default`: its nested codecs, and their chain for whole chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct N5Default {
    codecs: Vec<CodecSpec>,
    chunk_shape: Vec<u64>,
    data_type: DataType,
    fill_value: FillValue,
    depth: usize,
    /// The nested chain for a block of the chunk's own shape.
    whole: Box<CodecChain>,
}

fn bad(reason: String) -> MetadataError {
    MetadataError::BadCodec {
        codec: "n5_default".into(),
        reason,
    }
}

fn corrupt(reason: String) -> CodecError {
    CodecError::Corrupt {
        codec: "n5_default",
        reason,
    }
}

impl N5Default {
    /// Read its configuration for chunks of `chunk_shape` elements of
    /// `data_type`.
    pub fn from_configuration(
        config: Option<&Value>,
        chunk_shape: &[u64],
        data_type: DataType,
        fill_value: &FillValue,
        depth: usize,
    ) -> Result<Self, MetadataError> {
        if let Some(k) = super::unknown_member(config, &["codecs"]) {
            return Err(bad(format!("unknown configuration member `{k}`")));
        }
        let items = config
            .and_then(|c| c.get("codecs"))
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`codecs` is required: transpose, bytes, and at most one compressor".into()))?;
        let codecs = crate::zarr::metadata::codec_specs(items)?;
        let ndim = chunk_shape.len();
        let reversed: Vec<usize> = (0..ndim).rev().collect();
        let full_transpose = codecs.first().is_some_and(|t| {
            t.name == "transpose"
                && super::transpose::Transpose::from_configuration(t.configuration.as_ref(), ndim)
                    .is_ok_and(|t| t.order == reversed)
        });
        if !full_transpose {
            return Err(bad(format!(
                "the first nested codec must be a transpose with order {reversed:?} (N5 blocks are in F order)"
            )));
        }
        let big = codecs.get(1).is_some_and(|b| {
            b.name == "bytes"
                && match b.configuration.as_ref().and_then(|c| c.get("endian")) {
                    None | Some(Value::Null) => data_type.swap_unit() == 1,
                    Some(e) => e.as_str() == Some("big"),
                }
        });
        if !big || codecs.len() > 3 {
            return Err(bad(
                "the nested codecs must be transpose, bytes with endian \"big\", and at most one bytes -> bytes codec"
                    .into(),
            ));
        }
        let whole = CodecChain::build(&codecs, chunk_shape, data_type.clone(), fill_value, depth + 1)?;
        Ok(N5Default {
            codecs,
            chunk_shape: chunk_shape.to_vec(),
            data_type,
            fill_value: fill_value.clone(),
            depth,
            whole: Box::new(whole),
        })
    }

    /// Decode one block into a chunk (C order, native byte order).
    pub fn decode(&self, mut block: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let ndim = self.chunk_shape.len();
        let header = 4 + 4 * ndim;
        let be16 = |at: usize| block.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        let (Some(mode), Some(dims)) = (be16(0), be16(2)) else {
            return Err(corrupt(format!("a {}-byte block has no header", block.len())));
        };
        if mode != 0 {
            return Err(corrupt(format!("block mode {mode}: only the default mode (0) is read")));
        }
        if usize::from(dims) != ndim || block.len() < header {
            return Err(corrupt(format!(
                "the header says {dims} dimensions, the array has {ndim} (or the block is cut short)"
            )));
        }
        let shape: Vec<u64> = (0..ndim)
            .map(|d| {
                let at = 4 + 4 * d;
                u64::from(u32::from_be_bytes([
                    block[at],
                    block[at + 1],
                    block[at + 2],
                    block[at + 3],
                ]))
            })
            .collect();
        if shape.iter().zip(&self.chunk_shape).any(|(b, c)| b > c) {
            return Err(corrupt(format!(
                "the block's shape {shape:?} passes the chunk's {:?}",
                self.chunk_shape
            )));
        }
        // The header is dropped in place: no copy of the block.
        block.drain(..header);
        let data = block;
        if shape == self.chunk_shape {
            return self.whole.decode(data);
        }
        let item = self.data_type.size();
        let elements: u64 = self.chunk_shape.iter().product();
        let mut out = self.fill_value.repeat(elements as usize);
        if shape.contains(&0) {
            return Ok(out);
        }
        let chain = CodecChain::build(
            &self.codecs,
            &shape,
            self.data_type.clone(),
            &self.fill_value,
            self.depth + 1,
        )
        .map_err(|e| corrupt(format!("a block of shape {shape:?}: {e}")))?;
        let decoded = chain.decode(data)?;
        place(&decoded, &shape, &mut out, &self.chunk_shape, item);
        Ok(out)
    }
}

/// Copy C-order `block` of `shape` into C-order `chunk` of `chunk_shape`
/// (each axis at least as long) at the origin.
fn place(block: &[u8], shape: &[u64], chunk: &mut [u8], chunk_shape: &[u64], item: usize) {
    let ndim = shape.len();
    if ndim == 0 {
        chunk[..item].copy_from_slice(&block[..item]);
        return;
    }
    let row = shape[ndim - 1] as usize * item;
    let rows: u64 = shape[..ndim - 1].iter().product();
    let mut index = vec![0u64; ndim - 1];
    for r in 0..rows as usize {
        let at = index
            .iter()
            .zip(&chunk_shape[..ndim - 1])
            .fold(0u64, |a, (&i, &c)| a * c + i);
        let at = at as usize * chunk_shape[ndim - 1] as usize * item;
        chunk[at..at + row].copy_from_slice(&block[r * row..(r + 1) * row]);
        crate::odometer::next(&mut index, &shape[..ndim - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(cfg: &str, shape: &[u64], dt: DataType) -> Result<N5Default, MetadataError> {
        let fill = FillValue(vec![0xee; dt.size()]);
        N5Default::from_configuration(Some(&parse(cfg.as_bytes()).unwrap()), shape, dt, &fill, 0)
    }

    const PLAIN: &str = r#"{"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}}]}"#;

    fn block(dims: &[u32], values: &[u16]) -> Vec<u8> {
        let mut b = vec![0, 0, 0, dims.len() as u8];
        for d in dims {
            b.extend(d.to_be_bytes());
        }
        for v in values {
            b.extend(v.to_be_bytes());
        }
        b
    }

    /// N5's layout from its spec: F order (the first dimension fastest),
    /// big-endian, a header per block.
    #[test]
    fn blocks_decode_padded_or_truncated() {
        let c = codec(PLAIN, &[2, 3], DataType::UInt16).unwrap();
        // A full block: the 2 x 3 chunk in F order: element (i, j) is
        // value i + 2j + 1, so C order reads 1 3 5 / 2 4 6.
        let full = block(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let want: Vec<u8> = [1u16, 3, 5, 2, 4, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(c.decode(full).unwrap(), want);
        // A truncated edge block, 1 x 2 in Zarr's order: the rest is fill.
        let cut = block(&[1, 2], &[7, 8]);
        let mut want = vec![0xee; 12];
        want[..4].copy_from_slice(&[7u16, 8].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        assert_eq!(c.decode(cut).unwrap(), want);
        assert!(c.decode(block(&[2, 4], &[0; 8])).is_err(), "a block past the chunk");
        assert!(
            c.decode(block(&[3], &[0; 3])).is_err(),
            "a dimension count not the array's"
        );
        let mut varlength = block(&[3, 2], &[0; 6]);
        varlength[1] = 1;
        assert!(c.decode(varlength).is_err(), "varlength mode");
        assert!(c.decode(vec![0, 0]).is_err());
    }

    #[test]
    fn its_nested_codecs_are_checked() {
        let c = |cfg: &str| codec(cfg, &[2, 3], DataType::UInt16);
        assert!(c(PLAIN).is_ok());
        assert!(c(r#"{"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]}"#).is_err());
        assert!(
            c(
                r#"{"codecs": [{"name": "transpose", "configuration": {"order": [0, 1]}},
                {"name": "bytes", "configuration": {"endian": "big"}}]}"#
            )
            .is_err()
        );
        assert!(
            c(
                r#"{"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}}]}"#
            )
            .is_err()
        );
        let one_byte = r#"{"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}]}"#;
        assert!(codec(one_byte, &[2, 3], DataType::UInt8).is_ok());
        assert!(c(one_byte).is_err(), "uint16 needs endian big");
    }
}
