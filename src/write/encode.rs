//! A decoded chunk encoded again with its array's own codecs, for a write
//! into an existing array: what the chunk's decoder reads back is the
//! chunk that was encoded.
//!
//! The chains nzfs encodes are the ones zarr-python, xarray and nzfs itself
//! write by default, and their plain relatives: at most one `transpose`,
//! then `bytes`, then any of `zstd`, `gzip` and `crc32c`. Any other codec
//! (sharding, blosc, a numcodecs filter, a lossy codec) makes the array
//! read-only through the mount, and [`Encoder::new`] says which codec and
//! why, so that the writer's `open()` is refused with the reason logged.
//!
//! Invariants: an encoder exists only for a regular grid of fixed-size
//! elements, so every chunk it encodes has the array's full chunk shape
//! (edge chunks too, as the core spec stores them); its output decodes,
//! through [`crate::codec::CodecChain`], to its input byte for byte.

use std::io::Write;

use crate::codec::bytes::Endian;
use crate::codec::transpose::Transpose;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;

/// A `bytes -> bytes` stage nzfs encodes.
#[derive(Debug, Clone, PartialEq)]
enum Stage {
    Zstd { level: i32, checksum: bool },
    Gzip { level: u32 },
    Crc32c,
}

/// An array's codecs, run forwards.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoder {
    /// A `transpose`, and the chunk shape it permutes (each element's
    /// place is worked out when a chunk is encoded, not when the encoder
    /// is made: an open for writing makes one to check the codecs).
    transpose: Option<(Transpose, Vec<u64>)>,
    /// The stored byte order, where it is not this machine's and elements
    /// have more than one byte: the size of what is swapped.
    swap: Option<usize>,
    item: usize,
    stages: Vec<Stage>,
}

fn int_member(config: Option<&Value>, name: &str) -> Option<i64> {
    match config?.get(name)? {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

impl Encoder {
    /// The encoder of array `m`'s chunks, or why there is none (in words
    /// that say what the mount writes).
    pub fn new(m: &ArrayMetadata) -> Result<Encoder, String> {
        const WRITES: &str = "the mount re-encodes transpose, bytes, zstd, gzip and crc32c";
        if let Some(why) = &m.unsupported {
            return Err(format!("the array is not decoded: {why}"));
        }
        if m.zarr_format != 3 {
            return Err("only Zarr v3 arrays are written".into());
        }
        if !m.is_regular() {
            return Err("its chunk grid is not regular".into());
        }
        if m.narrow.is_some() || matches!(m.data_type, DataType::Struct(_)) || m.data_type.size() == 0 {
            return Err(format!("its data type {} is not written", m.data_type.name()));
        }
        let mut transpose = None;
        let mut swap = None;
        let mut stages = Vec::new();
        let mut seen_bytes = false;
        for spec in &m.codecs {
            let config = spec.configuration.as_ref();
            match (spec.name.as_str(), seen_bytes) {
                ("transpose", false) if transpose.is_none() => {
                    let t = Transpose::from_configuration(config, m.chunk_shape.len()).map_err(|e| e.to_string())?;
                    transpose = Some((t, m.chunk_shape.clone()));
                }
                ("bytes", false) => {
                    let codec = crate::codec::bytes::BytesCodec::from_configuration(config, &m.data_type)
                        .map_err(|e| e.to_string())?;
                    let unit = m.data_type.swap_unit();
                    if unit > 1 && codec.endian.is_some_and(|e| e != Endian::NATIVE) {
                        swap = Some(unit);
                    }
                    seen_bytes = true;
                }
                ("zstd", true) => stages.push(Stage::Zstd {
                    level: int_member(config, "level").unwrap_or(0).clamp(-131_072, 22) as i32,
                    checksum: matches!(config.and_then(|c| c.get("checksum")), Some(Value::Bool(true))),
                }),
                ("gzip", true) => stages.push(Stage::Gzip {
                    level: int_member(config, "level").unwrap_or(6).clamp(0, 9) as u32,
                }),
                ("crc32c", true) => stages.push(Stage::Crc32c),
                (name, _) => return Err(format!("its codec `{name}` is not written ({WRITES})")),
            }
        }
        if !seen_bytes {
            return Err(format!("it has no `bytes` codec ({WRITES})"));
        }
        Ok(Encoder {
            transpose,
            swap,
            item: m.data_type.size(),
            stages,
        })
    }

    /// Encode a whole decoded chunk (C order, this machine's byte order,
    /// the full chunk shape).
    pub fn encode(&self, mut chunk: Vec<u8>) -> Result<Vec<u8>, String> {
        if let Some((t, shape)) = &self.transpose {
            let places = t.source_indices(shape);
            if places.len() * self.item != chunk.len() {
                return Err(format!(
                    "a chunk of {} bytes is not {} elements",
                    chunk.len(),
                    places.len()
                ));
            }
            let mut out = vec![0; chunk.len()];
            for (i, &to) in places.iter().enumerate() {
                out[to * self.item..(to + 1) * self.item].copy_from_slice(&chunk[i * self.item..(i + 1) * self.item]);
            }
            chunk = out;
        }
        if let Some(unit) = self.swap {
            for item in chunk.chunks_exact_mut(unit) {
                item.reverse();
            }
        }
        for stage in &self.stages {
            chunk = match stage {
                Stage::Zstd { level, checksum } => {
                    let mut c = zstd::bulk::Compressor::new(*level).map_err(|e| format!("zstd: {e}"))?;
                    c.include_checksum(*checksum).map_err(|e| format!("zstd: {e}"))?;
                    c.compress(&chunk).map_err(|e| format!("zstd: {e}"))?
                }
                Stage::Gzip { level } => {
                    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(*level));
                    e.write_all(&chunk).map_err(|e| format!("gzip: {e}"))?;
                    e.finish().map_err(|e| format!("gzip: {e}"))?
                }
                Stage::Crc32c => {
                    let sum = crc32c::crc32c(&chunk);
                    chunk.extend_from_slice(&sum.to_le_bytes());
                    chunk
                }
            };
        }
        Ok(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::CodecChain;

    fn metadata(doc: &str) -> ArrayMetadata {
        match crate::zarr::metadata::NodeMetadata::parse(doc.as_bytes()).expect("metadata") {
            crate::zarr::metadata::NodeMetadata::Array(a) => *a,
            other => panic!("not an array: {other:?}"),
        }
    }

    /// Every chain nzfs encodes decodes, through the reader's own chain,
    /// to the chunk that was encoded; each other chain is refused with the
    /// codec named.
    #[test]
    fn encoded_chunks_decode_to_themselves() {
        let codecs = [
            r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
            r#"[{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]"#,
            r#"[{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]"#,
        ];
        for c in codecs {
            let doc = format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [5, 3], "data_type": "float32",
                "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4, 3]}}}},
                "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": {c}}}"#
            );
            let m = metadata(&doc);
            let enc = Encoder::new(&m).expect(c);
            let chunk: Vec<u8> = (0..12).flat_map(|i| (i as f32 * 1.5).to_ne_bytes()).collect();
            let encoded = enc.encode(chunk.clone()).unwrap();
            let chain = CodecChain::new(&m.codecs, &m.chunk_shape, m.data_type.clone(), &m.fill_value).unwrap();
            assert_eq!(chain.decode(encoded).unwrap(), chunk, "{c}");
        }
        for (c, named) in [
            (
                r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]"#,
                "blosc",
            ),
            (
                r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]"#,
                "sharding_indexed",
            ),
        ] {
            let doc = format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [5, 3], "data_type": "float32",
                "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4, 3]}}}},
                "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": {c}}}"#
            );
            let why = Encoder::new(&metadata(&doc)).unwrap_err();
            assert!(why.contains(named), "{why}");
        }
    }
}
