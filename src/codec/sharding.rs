//! `sharding_indexed` (spec: zarr-v3/codecs/sharding-indexed.rst): an
//! array -> bytes codec that stores a grid of inner chunks, each encoded
//! with its own chain, plus an index of `(offset, nbytes)` u64 pairs encoded
//! with `index_codecs`, at the `start` or `end` of the shard. Example:
//! `{"name": "sharding_indexed", "configuration": {"chunk_shape": [32, 32],
//! "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
//! "index_codecs": [{"name": "bytes", "configuration": {"endian":
//! "little"}}, {"name": "crc32c"}], "index_location": "end"}}`.
//!
//! Inner chains may hold another `sharding_indexed` (nested sharding): the
//! inner chain is just a [`CodecChain`]. Besides the full decode the chain
//! needs, this codec offers the pieces partial decoding is built from: the
//! index's position and size, index decoding, inner chunk decoding, and
//! copying a byte range of the shard out of decoded inner chunks.
//!
//! A shard of a variable-length type (strings, bytes: inner codecs
//! `vlen-utf8`/`vlen-bytes`, as anndata and zarr-python write) is decoded
//! whole: its inner chunks decode to text lines (one per element, see
//! [`crate::zarr::text`]), which are put in the shard's C order.
//!
//! Invariants: the index has a fixed encoded size (index codecs that
//! compress are refused); an index entry is either empty (both u64::MAX) or
//! lies inside the shard object; every inner chunk decodes to exactly its
//! inner chunk size (for a variable-length type: its element count of
//! lines).

use super::{CodecChain, CodecError};
use crate::json::Value;
use crate::zarr::data_type::{DataType, FillValue};
use crate::zarr::metadata::{CodecSpec, MetadataError, codec_specs};

/// Where a shard's index is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexLocation {
    /// Before the inner chunks.
    Start,
    /// After them (the default).
    End,
}

/// The most inner chunks a shard may have: its index (16 bytes each, 16 MiB
/// at most) is read and held whole, so a hostile shard shape must not make
/// it a gigabyte.
pub const MAX_INNER_CHUNKS: u64 = 1 << 20;

/// `sharding_indexed`, configured for one array.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardingCodec {
    /// The shape of a shard (the array's chunk shape).
    pub shard_shape: Vec<u64>,
    /// The shape of an inner chunk.
    pub inner_shape: Vec<u64>,
    /// Inner chunks per shard along each dimension.
    pub grid: Vec<u64>,
    /// The inner chunks' codecs.
    pub inner: CodecChain,
    /// The index's codecs.
    pub index_chain: CodecChain,
    /// Where the index is.
    pub index_location: IndexLocation,
    /// Encoded size of the index, in bytes.
    pub index_size: u64,
    /// The array's type.
    pub data_type: DataType,
    /// What an inner chunk with no bytes reads as.
    pub fill_value: FillValue,
}

/// Where an inner chunk lies in its shard object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InnerLocation {
    /// Not written: it reads as the fill value.
    Empty,
    /// Its encoded bytes.
    At {
        /// Where they start in the shard object.
        offset: u64,
        /// How many there are.
        nbytes: u64,
    },
}

fn codec_list(v: Option<&Value>, what: &str) -> Result<Vec<CodecSpec>, MetadataError> {
    let bad = |reason: String| MetadataError::BadCodec {
        codec: "sharding_indexed".into(),
        reason,
    };
    let items = v
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("`{what}` is required and must be a list")))?;
    codec_specs(items)
}

impl ShardingCodec {
    /// Read its configuration for an array whose chunks are `shard_shape`.
    pub fn from_configuration(
        config: Option<&Value>,
        shard_shape: &[u64],
        data_type: DataType,
        fill_value: &FillValue,
        depth: usize,
    ) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: "sharding_indexed".into(),
            reason,
        };
        if depth > 8 {
            return Err(bad("sharding nested more than 8 deep".into()));
        }
        let config = config.ok_or_else(|| bad("configuration is required".into()))?;
        let inner_shape: Vec<u64> = config
            .get("chunk_shape")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            .ok_or_else(|| bad("`chunk_shape` must be a list of integers".into()))?;
        if inner_shape.len() != shard_shape.len()
            || inner_shape.iter().zip(shard_shape).any(|(&i, &s)| i == 0 || s % i != 0)
        {
            return Err(bad(format!(
                "inner chunk shape {inner_shape:?} does not divide shard shape {shard_shape:?}"
            )));
        }
        let grid: Vec<u64> = shard_shape.iter().zip(&inner_shape).map(|(s, i)| s / i).collect();
        let n = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g)).unwrap_or(u64::MAX);
        if n > MAX_INNER_CHUNKS {
            return Err(bad(format!(
                "{n} inner chunks per shard (grid {grid:?}); nzfs reads at most {MAX_INNER_CHUNKS}, \
                 whose index is {} MiB",
                (MAX_INNER_CHUNKS * 16) >> 20
            )));
        }
        let index_location = match config.get("index_location") {
            None => IndexLocation::End,
            Some(Value::Str(s)) if s == "end" => IndexLocation::End,
            Some(Value::Str(s)) if s == "start" => IndexLocation::Start,
            Some(other) => return Err(bad(format!("index_location {other} is not \"start\" or \"end\""))),
        };
        let inner = CodecChain::build(
            &codec_list(config.get("codecs"), "codecs")?,
            &inner_shape,
            data_type.clone(),
            fill_value,
            depth + 1,
        )?;
        let mut index_shape = grid.clone();
        index_shape.push(2);
        let index_chain = CodecChain::build(
            &codec_list(config.get("index_codecs"), "index_codecs")?,
            &index_shape,
            DataType::UInt64,
            &FillValue(vec![0xff; 8]),
            depth + 1,
        )?;
        let index_size = index_chain
            .encoded_size()
            .ok_or_else(|| bad("index_codecs must not compress (the index size must be fixed)".into()))?
            as u64;
        if n.checked_mul(16).is_none() {
            return Err(bad("too many inner chunks".into()));
        }
        Ok(ShardingCodec {
            shard_shape: shard_shape.to_vec(),
            inner_shape,
            grid,
            inner,
            index_chain,
            index_location,
            index_size,
            data_type,
            fill_value: fill_value.clone(),
        })
    }

    /// Inner chunks per shard.
    pub fn inner_count(&self) -> u64 {
        self.grid.iter().product()
    }

    /// The inner chunks' extent along dimension `d`.
    pub fn inner_extent(&self, d: usize) -> u64 {
        self.inner_shape.get(d).copied().unwrap_or(1)
    }

    /// Decoded bytes of one inner chunk.
    pub fn inner_bytes(&self) -> usize {
        self.inner_shape.iter().product::<u64>() as usize * self.data_type.size()
    }

    /// The byte range of the index in a shard object of `object_len` bytes.
    pub fn index_range(&self, object_len: u64) -> Result<(u64, u64), CodecError> {
        if object_len < self.index_size {
            return Err(CodecError::Corrupt {
                codec: "sharding_indexed",
                reason: format!(
                    "the shard is {object_len} bytes, shorter than its index ({} bytes for {} inner chunks)",
                    self.index_size,
                    self.inner_count()
                ),
            });
        }
        Ok(match self.index_location {
            IndexLocation::Start => (0, self.index_size),
            IndexLocation::End => (object_len - self.index_size, self.index_size),
        })
    }

    /// Decode an encoded index into native `(offset, nbytes)` u64 pairs.
    pub fn decode_index(&self, encoded: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        self.index_chain.decode(encoded)
    }

    /// Entry `inner` of a decoded index, checked against the object length
    /// when it is known.
    pub fn locate(&self, index: &[u8], inner: u64, object_len: Option<u64>) -> Result<InnerLocation, CodecError> {
        let at = inner as usize * 16;
        let word = |k: usize| u64::from_ne_bytes(index[at + k..at + k + 8].try_into().expect("8 bytes"));
        let (offset, nbytes) = (word(0), word(8));
        if offset == u64::MAX && nbytes == u64::MAX {
            return Ok(InnerLocation::Empty);
        }
        let end = offset.checked_add(nbytes);
        if end.is_none() || object_len.is_some_and(|len| end.is_some_and(|e| e > len)) {
            return Err(CodecError::Corrupt {
                codec: "sharding_indexed",
                reason: format!(
                    "index entry {inner} ({offset}+{nbytes}) points past the end of the shard ({} bytes)",
                    object_len.map_or("?".into(), |l| l.to_string())
                ),
            });
        }
        Ok(InnerLocation::At { offset, nbytes })
    }

    /// Elements per inner chunk.
    fn inner_elements(&self) -> usize {
        self.inner_shape.iter().product::<u64>() as usize
    }

    /// Decode one inner chunk's encoded bytes (or the fill for an empty one).
    pub fn decode_inner(&self, encoded: Option<Vec<u8>>) -> Result<Vec<u8>, CodecError> {
        match encoded {
            // The fill of a variable-length type is its one line.
            None => Ok(self.fill_value.repeat(self.inner_elements())),
            Some(bytes) => self.inner.decode(bytes),
        }
    }

    /// Full decode of a shard object (when partial decoding is not possible).
    pub fn decode(&self, shard: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let len = shard.len() as u64;
        let (start, size) = self.index_range(len)?;
        let index = self.decode_index(shard[start as usize..(start + size) as usize].to_vec())?;
        let decoded = (0..self.inner_count())
            .map(|inner| {
                let encoded = match self.locate(&index, inner, Some(len))? {
                    InnerLocation::Empty => None,
                    InnerLocation::At { offset, nbytes } => {
                        Some(shard[offset as usize..(offset + nbytes) as usize].to_vec())
                    }
                };
                self.decode_inner(encoded)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if self.data_type.element_size().is_none() {
            return self.interleave_lines(&decoded);
        }
        let total = self.shard_shape.iter().product::<u64>() as usize * self.data_type.size();
        let mut out = vec![0u8; total];
        self.copy_range(0, &mut out, |i| &decoded[i as usize]);
        Ok(out)
    }

    /// The lines of a variable-length shard in its C order, from its inner
    /// chunks' lines (each in the inner chunk's C order).
    fn interleave_lines(&self, decoded: &[Vec<u8>]) -> Result<Vec<u8>, CodecError> {
        let per = self.inner_elements();
        let mut lines: Vec<Vec<&[u8]>> = Vec::with_capacity(decoded.len());
        for (i, d) in decoded.iter().enumerate() {
            let l: Vec<&[u8]> = d.split_inclusive(|&b| b == b'\n').collect();
            if l.len() != per || l.last().is_some_and(|x| !x.ends_with(b"\n")) {
                return Err(CodecError::Corrupt {
                    codec: "sharding_indexed",
                    reason: format!("inner chunk {i} holds {} values, not {per}", l.len()),
                });
            }
            lines.push(l);
        }
        let nd = self.shard_shape.len();
        let total: u64 = self.shard_shape.iter().product();
        let mut out = Vec::with_capacity(decoded.iter().map(Vec::len).sum());
        let mut pos = vec![0u64; nd];
        for _ in 0..total {
            let (inner, within) = self.inner_of(&pos);
            out.extend_from_slice(lines[inner as usize][within as usize]);
            crate::odometer::next(&mut pos, &self.shard_shape);
        }
        Ok(out)
    }

    /// Inner chunk linear index and element index inside it (C order), for
    /// the element at shard position `pos`.
    fn inner_of(&self, pos: &[u64]) -> (u64, u64) {
        let mut inner = 0u64;
        let mut within = 0u64;
        for ((&p, &g), &i) in pos.iter().zip(&self.grid).zip(&self.inner_shape) {
            inner = inner * g + p / i;
            within = within * i + p % i;
        }
        (inner, within)
    }

    /// The inner chunks that bytes `[start, end)` of the decoded shard touch,
    /// in the order they are first met.
    pub fn inner_chunks_in(&self, start: u64, end: u64) -> Vec<u64> {
        let mut found = Vec::new();
        self.for_each_run(start, end, |inner, _, _, _| {
            if !found.contains(&inner) {
                found.push(inner);
            }
        });
        found
    }

    /// Copy bytes `[start, start + out.len())` of the decoded shard into
    /// `out`, taking each inner chunk's bytes from `inner(i)`.
    pub fn copy_range<'a>(&self, start: u64, out: &mut [u8], mut inner: impl FnMut(u64) -> &'a [u8]) {
        let end = start + out.len() as u64;
        self.for_each_run(start, end, |i, src_at, dst_at, len| {
            out[dst_at..dst_at + len].copy_from_slice(&inner(i)[src_at..src_at + len]);
        });
    }

    /// Walk bytes `[start, end)` of the decoded shard (C order) as runs that
    /// each lie in one inner chunk: `f(inner, offset in inner, offset from
    /// start, length)`.
    fn for_each_run(&self, start: u64, end: u64, mut f: impl FnMut(u64, usize, usize, usize)) {
        let item = self.data_type.size() as u64;
        let nd = self.shard_shape.len();
        let total = self.shard_shape.iter().product::<u64>() * item;
        let end = end.min(total);
        if start >= end {
            return;
        }
        if nd == 0 {
            f(0, start as usize, 0, (end - start) as usize);
            return;
        }
        let row_len = self.shard_shape[nd - 1];
        let inner_row = self.inner_shape[nd - 1];
        let mut b = start;
        while b < end {
            let elem = b / item;
            let col = elem % row_len;
            // The run ends at the inner chunk's edge along the last dimension.
            let run_end_elem = elem - col + ((col / inner_row) + 1) * inner_row;
            let run_end = (run_end_elem * item).min(end);
            let mut pos = vec![0u64; nd];
            let mut rest = elem;
            for d in (0..nd).rev() {
                pos[d] = rest % self.shard_shape[d];
                rest /= self.shard_shape[d];
            }
            let (inner, within) = self.inner_of(&pos);
            let src_at = (within * item + b % item) as usize;
            f(inner, src_at, (b - start) as usize, (run_end - b) as usize);
            b = run_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn codec(config: &str, shard: &[u64]) -> ShardingCodec {
        ShardingCodec::from_configuration(
            Some(&parse(config.as_bytes()).unwrap()),
            shard,
            DataType::UInt8,
            &FillValue(vec![0xee]),
            0,
        )
        .unwrap()
    }

    const CFG: &str = r#"{"chunk_shape": [2, 2], "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}"#;

    /// Encode a shard of u8 by hand: inner chunks in order, index at the end.
    fn encode(c: &ShardingCodec, shard: &[u8], empty: &[u64]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut index = Vec::new();
        for inner in 0..c.inner_count() {
            if empty.contains(&inner) {
                index.extend(u64::MAX.to_le_bytes());
                index.extend(u64::MAX.to_le_bytes());
                continue;
            }
            let mut bytes = vec![0u8; c.inner_bytes()];
            c.for_each_run(0, shard.len() as u64, |i, src, dst, len| {
                if i == inner {
                    bytes[src..src + len].copy_from_slice(&shard[dst..dst + len]);
                }
            });
            index.extend((body.len() as u64).to_le_bytes());
            index.extend((bytes.len() as u64).to_le_bytes());
            body.extend(bytes);
        }
        index.extend(crc32c::crc32c(&index).to_le_bytes());
        body.extend(index);
        body
    }

    #[test]
    fn full_and_partial_decoding_agree_with_a_plain_model() {
        let c = codec(CFG, &[4, 6]);
        assert_eq!((c.inner_count(), c.index_size), (6, 6 * 16 + 4));
        let shard: Vec<u8> = (0..24).collect();
        let enc = encode(&c, &shard, &[4]);
        let mut want = shard.clone();
        for r in 2..4 {
            for col in 2..4 {
                want[r * 6 + col] = 0xee; // inner chunk (1, 1) is empty
            }
        }
        assert_eq!(c.decode(enc.clone()).unwrap(), want);
        // Partial: bytes 7..9 are row 1, columns 1..3: inner chunks 0 and 1.
        assert_eq!(c.inner_chunks_in(7, 9), [0, 1]);
        let full = c.decode(enc).unwrap();
        let inner_bytes: Vec<Vec<u8>> = (0..6)
            .map(|i| {
                let mut b = vec![0; 4];
                c.for_each_run(0, 24, |k, src, dst, len| {
                    if k == i {
                        b[src..src + len].copy_from_slice(&full[dst..dst + len]);
                    }
                });
                b
            })
            .collect();
        for start in 0..24 {
            for end in start..=24 {
                let mut out = vec![0; (end - start) as usize];
                c.copy_range(start, &mut out, |i| &inner_bytes[i as usize]);
                assert_eq!(out, full[start as usize..end as usize]);
            }
        }
    }

    #[test]
    fn index_errors() {
        let c = codec(CFG, &[4, 6]);
        let mut enc = encode(&c, &(0..24).collect::<Vec<u8>>(), &[]);
        let n = enc.len();
        enc[n - 10] ^= 1; // corrupt the index: checksum mismatch
        assert!(matches!(c.decode(enc), Err(CodecError::ChecksumMismatch { .. })));
        let mut index = vec![0u8; 96];
        index[..8].copy_from_slice(&100u64.to_ne_bytes());
        index[8..16].copy_from_slice(&10u64.to_ne_bytes());
        assert!(c.locate(&index, 0, Some(50)).is_err());
        assert!(c.decode(vec![1, 2, 3]).is_err());
        let compressing = CFG.replace(r#"{"name": "crc32c"}"#, r#"{"name": "zstd"}"#);
        assert!(
            ShardingCodec::from_configuration(
                Some(&parse(compressing.as_bytes()).unwrap()),
                &[4, 6],
                DataType::UInt8,
                &FillValue(vec![0]),
                0
            )
            .is_err()
        );
        let odd = CFG.replace("[2, 2]", "[3, 2]");
        assert!(
            ShardingCodec::from_configuration(
                Some(&parse(odd.as_bytes()).unwrap()),
                &[4, 6],
                DataType::UInt8,
                &FillValue(vec![0]),
                0
            )
            .is_err()
        );
    }
}
