//! A codec chain: zero or more `array -> array` codecs, exactly one
//! `array -> bytes` codec, zero or more `bytes -> bytes` codecs.
//!
//! [`CodecChain::new`] validates the order and computes each stage's
//! representation before any chunk is read (core spec, "Determination of
//! encoded representations"). [`CodecChain::decode`] runs the stages in
//! reverse and yields the chunk in C order, native byte order, at the full
//! chunk shape; [`CodecChain::encode`] runs them forwards from there, for
//! the chains [`CodecChain::encodable`] accepts.
//!
//! Unknown codecs make the chain fail, unless they carry
//! `"must_understand": false`, in which case they are skipped.

use super::bytes::BytesCodec;
use super::filter::{self, Filter};
use super::numcodecs::{Checksum, Compressor};
use super::sharding::ShardingCodec;
use super::transpose::Transpose;
use super::{ArrayToArray, ArrayToBytes, BytesToBytes, CodecError, EncodeError};
use crate::zarr::data_type::{DataType, FillValue};
use crate::zarr::metadata::{CodecSpec, MetadataError};
use crate::zarr::numpy::NumType;

/// Whether numcodecs id `id` is a `bytes -> bytes` codec nzfs decodes.
fn is_bytes_codec(id: &str) -> bool {
    matches!(
        id,
        "zstd"
            | "gzip"
            | "blosc"
            | "crc32c"
            | "zlib"
            | "bz2"
            | "lz4"
            | "lzma"
            | "crc32"
            | "adler32"
            | "fletcher32"
            | "jenkins_lookup3"
    ) || filter::is_filter(id)
}

/// Whether codec `name` (a v3 name, or `numcodecs.` and an id) is a
/// `bytes -> bytes` codec nzfs decodes.
fn is_bytes_to_bytes(name: &str) -> bool {
    match name.strip_prefix("numcodecs.") {
        Some(id) => is_bytes_codec(id),
        None => matches!(name, "zstd" | "gzip" | "blosc" | "crc32c" | "conditional"),
    }
}

/// How deep `conditional` codecs may nest in one another.
const MAX_CONDITIONAL_DEPTH: usize = 4;

/// The `bytes -> bytes` codec `spec` names (see [`is_bytes_to_bytes`]),
/// over bytes that hold elements of `item` bytes; `depth` counts the
/// enclosing `conditional` codecs.
fn bytes_codec(spec: &CodecSpec, item: usize, depth: usize) -> Result<BytesToBytes, MetadataError> {
    let config = spec.configuration.as_ref();
    let name = spec.name.as_str();
    Ok(match name.strip_prefix("numcodecs.").unwrap_or(name) {
        "zstd" => BytesToBytes::Zstd(super::zstd::Zstd::from_configuration(config)),
        "gzip" => BytesToBytes::Gzip(super::gzip::Gzip::from_configuration(config)),
        "blosc" => {
            super::blosc::check_configuration(config)?;
            BytesToBytes::Blosc
        }
        "crc32c" => BytesToBytes::Crc32c,
        "conditional" if depth >= MAX_CONDITIONAL_DEPTH => {
            return Err(MetadataError::BadCodec {
                codec: "conditional".into(),
                reason: format!("nested more than {MAX_CONDITIONAL_DEPTH} deep"),
            });
        }
        "conditional" => {
            let c = super::conditional::Conditional::from_configuration(config, |inner| {
                if !is_bytes_to_bytes(&inner.name) {
                    return Err(MetadataError::BadCodec {
                        codec: "conditional".into(),
                        reason: format!("`{}` is not a bytes -> bytes codec nzfs decodes", inner.name),
                    });
                }
                bytes_codec(inner, item, depth + 1)
            })?;
            BytesToBytes::Conditional(Box::new(c))
        }
        "zlib" => BytesToBytes::Numcodecs(Compressor::Zlib),
        "bz2" => BytesToBytes::Numcodecs(Compressor::Bz2),
        "lz4" => BytesToBytes::Numcodecs(Compressor::Lz4),
        "lzma" => BytesToBytes::Numcodecs(Compressor::Lzma(super::lzma::Lzma::from_configuration(config)?)),
        id @ ("crc32" | "adler32" | "fletcher32" | "jenkins_lookup3") => {
            BytesToBytes::Checksum(Checksum::from_configuration(id, config)?)
        }
        id => {
            let native = NumType::native(&DataType::UInt8).map(|t| NumType { size: item, ..t });
            BytesToBytes::Filter(Filter::from_configuration(id, config, native)?)
        }
    })
}

/// Slack allowed above the chunk size when a stage's size is not fixed.
const SLACK: usize = 64 * 1024;

/// The most any stage of a variable-length chunk may hold (256 MiB).
pub const VARLEN_LIMIT: usize = 256 << 20;

/// Whether `a` decodes chunks to text lines: `vlen-utf8`/`vlen-bytes`, or
/// sharding over them.
fn decodes_to_lines(a: &ArrayToBytes) -> bool {
    match a {
        ArrayToBytes::VarLen { .. } => true,
        ArrayToBytes::Sharding(s) => s.inner.is_varlen(),
        _ => false,
    }
}

/// An array's codecs, each with what it decodes to: zero or more
/// `array -> array`, one `array -> bytes`, zero or more `bytes -> bytes`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecChain {
    /// Each codec with the shape and type of its decoded representation.
    array_to_array: Vec<(ArrayToArray, Vec<u64>, DataType)>,
    array_to_bytes: ArrayToBytes,
    /// The decoded representation of the `array -> bytes` codec.
    bytes_shape: Vec<u64>,
    /// The element type the `array -> bytes` codec sees.
    data_type: DataType,
    /// Each codec with the exact size of its decoded bytes, when known.
    bytes_to_bytes: Vec<(BytesToBytes, Option<usize>)>,
    /// Upper bound on any intermediate byte string.
    limit: usize,
    /// The encoded size, when every stage fixes it (no compression).
    encoded_size: Option<usize>,
    /// The codecs skipped as `"must_understand": false`: a chain that has
    /// one is not encoded, as what it would write lacks that codec.
    skipped: Vec<String>,
}

impl CodecChain {
    /// The chain of an array whose chunks have `chunk_shape`.
    pub fn new(
        codecs: &[CodecSpec],
        chunk_shape: &[u64],
        data_type: DataType,
        fill_value: &FillValue,
    ) -> Result<Self, MetadataError> {
        Self::build(codecs, chunk_shape, data_type, fill_value, 0)
    }

    /// As [`CodecChain::new`], `depth` levels of sharding down.
    pub fn build(
        codecs: &[CodecSpec],
        chunk_shape: &[u64],
        data_type: DataType,
        fill_value: &FillValue,
        depth: usize,
    ) -> Result<Self, MetadataError> {
        let elements: u64 = chunk_shape.iter().product();
        let chunk_bytes = usize::try_from(elements * data_type.size() as u64)
            .map_err(|_| MetadataError::ChunkTooLarge(u128::from(elements)))?;
        let order_error = |name: &str, reason: &str| MetadataError::BadCodec {
            codec: name.into(),
            reason: reason.into(),
        };

        // An array -> array codec must come before the array -> bytes one.
        let not_after_bytes = |name: &str, a2b: &Option<ArrayToBytes>| match a2b {
            Some(_) => Err(order_error(
                name,
                "an array -> array codec follows the array -> bytes codec",
            )),
            None => Ok(()),
        };
        let mut array_to_array = Vec::new();
        let mut array_to_bytes = None;
        let mut bytes_to_bytes = Vec::new();
        let mut shape = chunk_shape.to_vec();
        // The element type of the current stage (array -> array filters may
        // change it) and, on the bytes side, the size of its elements.
        let mut stage_type = data_type.clone();
        let mut item = data_type.size();
        // The widest element any stage holds (cast_value may widen), and
        // whether a cast_value came before.
        let mut widest = data_type.size();
        let mut cast = false;
        let mut size = None;
        let mut skipped = Vec::new();
        for spec in codecs {
            let config = spec.configuration.as_ref();
            let numcodecs = spec.name.strip_prefix("numcodecs.");
            match (spec.name.as_str(), numcodecs) {
                ("transpose", _) => {
                    not_after_bytes("transpose", &array_to_bytes)?;
                    let t = Transpose::from_configuration(config, shape.len())?;
                    let encoded = t.encoded_shape(&shape);
                    let decoded = std::mem::replace(&mut shape, encoded);
                    array_to_array.push((ArrayToArray::Transpose(t), decoded, stage_type.clone()));
                }
                ("reshape", _) => {
                    not_after_bytes("reshape", &array_to_bytes)?;
                    shape = super::reshape::encoded_shape(config, &shape)?;
                }
                ("cast_value", _) => {
                    not_after_bytes("cast_value", &array_to_bytes)?;
                    let c = super::cast_value::CastValue::from_configuration(config, &stage_type)?;
                    let encoded = c.encoded.clone();
                    array_to_array.push((ArrayToArray::CastValue(c), shape.clone(), stage_type));
                    item = encoded.size();
                    widest = widest.max(encoded.size());
                    stage_type = encoded;
                    cast = true;
                }
                ("scale_offset", _) => {
                    not_after_bytes("scale_offset", &array_to_bytes)?;
                    let c = super::scale_offset::ScaleOffset::from_configuration(config, &stage_type)?;
                    array_to_array.push((ArrayToArray::ScaleOffset(c), shape.clone(), stage_type.clone()));
                }
                // zarr-extensions' `bitround` is numcodecs' (its
                // deprecated alias): rounding happened when writing, so
                // decoding leaves the values as they are.
                (id @ "bitround", _) | (_, Some(id))
                    if (id == "bitround" || filter::is_filter(id)) && id != "shuffle" && array_to_bytes.is_none() =>
                {
                    let f = Filter::from_configuration(id, config, NumType::native(&stage_type))?;
                    let elements: u64 = shape.iter().product();
                    let encoded_shape = match f {
                        Filter::PackBits => vec![1 + elements.div_ceil(8)],
                        _ => shape.clone(),
                    };
                    let encoded_type = f.encoded_type().map_or(stage_type.clone(), NumType::data_type);
                    let decoded = std::mem::replace(&mut shape, encoded_shape);
                    let decoded_type = std::mem::replace(&mut stage_type, encoded_type);
                    array_to_array.push((ArrayToArray::Filter(f), decoded, decoded_type));
                }
                ("bytes", _) => {
                    if array_to_bytes.is_some() {
                        return Err(order_error("bytes", "a second array -> bytes codec"));
                    }
                    array_to_bytes = Some(ArrayToBytes::Bytes(BytesCodec::from_configuration(
                        config,
                        &stage_type,
                    )?));
                    let elements: u64 = shape.iter().product();
                    size = Some(elements as usize * stage_type.size());
                    item = stage_type.size();
                }
                ("packbits", _) => {
                    if array_to_bytes.is_some() {
                        return Err(order_error("packbits", "a second array -> bytes codec"));
                    }
                    let c = super::packbits::PackBits::from_configuration(config, &stage_type)?;
                    let elements: u64 = shape.iter().product();
                    size = c.encoded_size(elements);
                    array_to_bytes = Some(ArrayToBytes::PackBits(c));
                    item = 1;
                }
                (name @ ("numcodecs.zfpy" | "zfp"), _) => {
                    // zfpy's chunks carry zfp's header; the registry's zfp
                    // takes its mode from the configuration.
                    let registry = name == "zfp";
                    if array_to_bytes.is_some() {
                        return Err(order_error(name, "a second array -> bytes codec"));
                    }
                    if !super::zfp::AVAILABLE {
                        return Err(MetadataError::Unsupported {
                            point: "codec",
                            name: format!("{name} (this nzfs was built without the zfp feature)"),
                        });
                    }
                    let (holds, what) = match registry {
                        true => (
                            super::zfp::registry_supports(&stage_type) && shape.len() <= 4,
                            "holds int8 to int64, uint8, uint16, float32 and float64 in 0 to 4 dimensions",
                        ),
                        false => (
                            super::zfp::supports(&stage_type) && !shape.is_empty() && shape.len() <= 4,
                            "holds float32, float64, int32 and int64 in 1 to 4 dimensions",
                        ),
                    };
                    if !holds {
                        return Err(order_error(name, what));
                    }
                    let mode = match registry {
                        true => Some(super::zfp::Mode::from_configuration(config)?),
                        false => None,
                    };
                    array_to_bytes = Some(ArrayToBytes::Zfp(mode));
                    size = None;
                    item = stage_type.size();
                }
                ("numcodecs.pcodec", _) => {
                    if array_to_bytes.is_some() {
                        return Err(order_error("numcodecs.pcodec", "a second array -> bytes codec"));
                    }
                    if !super::pcodec::supports(&stage_type) {
                        return Err(order_error("numcodecs.pcodec", "holds integers and floats only"));
                    }
                    array_to_bytes = Some(ArrayToBytes::Pcodec);
                    size = None;
                    item = stage_type.size();
                }
                (name @ ("vlen-utf8" | "vlen-bytes"), _) => {
                    // Transposes may come first (a Zarr v2 array of
                    // `order: "F"`): they reorder the values, whatever
                    // their lengths.
                    let transposes_only = array_to_array
                        .iter()
                        .all(|(c, _, _)| matches!(c, ArrayToArray::Transpose(_)));
                    if array_to_bytes.is_some() || !transposes_only {
                        return Err(order_error(
                            name,
                            "must be the first codec (after transposes) and the only array -> bytes codec",
                        ));
                    }
                    if stage_type.element_size().is_some() {
                        return Err(order_error(name, "needs a variable-length data type (string or bytes)"));
                    }
                    array_to_bytes = Some(ArrayToBytes::VarLen {
                        bytes: name == "vlen-bytes",
                    });
                    size = None;
                    item = 1;
                }
                ("n5_default", _) => {
                    if array_to_bytes.is_some() || !array_to_array.is_empty() {
                        return Err(order_error(
                            "n5_default",
                            "must be the first codec: it holds the block's own transpose and bytes",
                        ));
                    }
                    let codec = super::n5::N5Default::from_configuration(
                        config,
                        &shape,
                        stage_type.clone(),
                        fill_value,
                        depth,
                    )?;
                    array_to_bytes = Some(ArrayToBytes::N5(Box::new(codec)));
                    size = None;
                }
                ("sharding_indexed", _) if cast => {
                    // Its fill would be the cast one: not worked out here.
                    return Err(MetadataError::Unsupported {
                        point: "codec",
                        name: "sharding_indexed after cast_value".into(),
                    });
                }
                ("sharding_indexed", _) => {
                    if array_to_bytes.is_some() {
                        return Err(order_error("sharding_indexed", "a second array -> bytes codec"));
                    }
                    let codec =
                        ShardingCodec::from_configuration(config, &shape, stage_type.clone(), fill_value, depth)?;
                    array_to_bytes = Some(ArrayToBytes::Sharding(Box::new(codec)));
                    size = None;
                }
                (name, _) if is_bytes_to_bytes(name) => {
                    if array_to_bytes.is_none() {
                        return Err(order_error(
                            name,
                            "a bytes -> bytes codec comes before the array -> bytes codec",
                        ));
                    }
                    let codec = bytes_codec(spec, item, 0)?;
                    let encoded = codec.encoded_size(size, item);
                    if let BytesToBytes::Filter(f) = &codec
                        && let Some(t) = f.encoded_type()
                    {
                        item = t.size;
                    }
                    bytes_to_bytes.push((codec, std::mem::replace(&mut size, encoded)));
                }
                (other, _) if !spec.must_understand => {
                    tracing::debug!(codec = other, "skipping unknown codec marked must_understand: false");
                    skipped.push(other.to_string());
                }
                (other, _) => {
                    return Err(MetadataError::Unsupported {
                        point: "codec",
                        name: other.to_string(),
                    });
                }
            }
        }
        if data_type.element_size().is_none() && !array_to_bytes.as_ref().is_some_and(decodes_to_lines) {
            return Err(MetadataError::BadCodec {
                codec: "codecs".into(),
                reason: format!(
                    "a {} array needs vlen-utf8 or vlen-bytes (first, or first in sharding_indexed's codecs)",
                    data_type.name()
                ),
            });
        }
        let array_to_bytes = array_to_bytes.ok_or_else(|| MetadataError::BadCodec {
            codec: "codecs".into(),
            reason: "the chain has no array -> bytes codec".into(),
        })?;
        Ok(CodecChain {
            array_to_array,
            array_to_bytes,
            bytes_shape: shape,
            data_type: stage_type,
            bytes_to_bytes,
            limit: if data_type.element_size().is_some() {
                (chunk_bytes / data_type.size().max(1))
                    .saturating_mul(widest.max(data_type.size()))
                    .saturating_add(SLACK)
            } else {
                VARLEN_LIMIT
            },
            encoded_size: size,
            skipped,
        })
    }

    /// Whether [`CodecChain::encode`] encodes this chain's chunks: its
    /// elements have a fixed size and each codec encodes (`transpose`,
    /// `reshape`, `bytes`, `zstd`, `gzip`, `crc32c`); else the first codec
    /// that does not, named.
    pub fn encodable(&self) -> Result<(), EncodeError> {
        let not = |codec: &str, reason: &'static str| EncodeError::NotEncodable {
            codec: codec.into(),
            reason,
        };
        if let Some(name) = self.skipped.first() {
            return Err(not(name, "an unknown codec the chain skips when decoding"));
        }
        for (codec, _, decoded_type) in &self.array_to_array {
            match codec {
                ArrayToArray::Transpose(_) if decoded_type.element_size().is_some() => {}
                ArrayToArray::Transpose(_) => return Err(not("transpose", "of variable-length elements")),
                ArrayToArray::ScaleOffset(_) => {
                    return Err(not("scale_offset", "an array -> array codec nzfs only decodes"));
                }
                ArrayToArray::CastValue(_) => {
                    return Err(not("cast_value", "an array -> array codec nzfs only decodes"));
                }
                ArrayToArray::Filter(f) => return Err(not(f.name(), "a numcodecs filter nzfs only decodes")),
            }
        }
        match &self.array_to_bytes {
            ArrayToBytes::Bytes(_) => {}
            ArrayToBytes::Pcodec => return Err(not("numcodecs.pcodec", "an array -> bytes codec nzfs only decodes")),
            ArrayToBytes::Zfp(_) => return Err(not("zfp", "a lossy codec nzfs only decodes")),
            ArrayToBytes::PackBits(_) => return Err(not("packbits", "an array -> bytes codec nzfs only decodes")),
            ArrayToBytes::VarLen { .. } => {}
            ArrayToBytes::Sharding(_) => {
                return Err(not("sharding_indexed", "a shard is rewritten whole, with its index"));
            }
            ArrayToBytes::N5(_) => return Err(not("n5_default", "an array -> bytes codec nzfs only decodes")),
        }
        self.bytes_to_bytes.iter().try_for_each(|(codec, _)| codec.encodable())
    }

    /// Encode one whole decoded chunk (C order, native byte order, the full
    /// chunk shape) into what the store holds: each stage of
    /// [`CodecChain::decode`] undone, in the opposite order, so that
    /// `decode(encode(chunk)) == chunk`.
    pub fn encode(&self, chunk: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        self.encodable()?;
        let mut array = chunk;
        for (codec, decoded_shape, decoded_type) in &self.array_to_array {
            if let ArrayToArray::Transpose(t) = codec {
                let expected = decoded_shape.iter().product::<u64>() as usize * decoded_type.size();
                if array.len() != expected {
                    return Err(EncodeError::SizeMismatch {
                        codec: "transpose",
                        expected,
                        got: array.len(),
                    });
                }
                array = t.encode(&array, decoded_shape, decoded_type.size());
            }
        }
        let elements: u64 = self.bytes_shape.iter().product();
        let mut bytes = match &self.array_to_bytes {
            ArrayToBytes::Bytes(b) => b.encode(array, &self.data_type, elements as usize)?,
            ArrayToBytes::VarLen { bytes } => super::vlen::encode(
                &array,
                elements as usize,
                if *bytes { "vlen-bytes" } else { "vlen-utf8" },
            )?,
            _ => {
                return Err(EncodeError::NotEncodable {
                    codec: "codecs".into(),
                    reason: "no `bytes` codec",
                });
            }
        };
        for (codec, _) in &self.bytes_to_bytes {
            bytes = codec.encode(bytes)?;
        }
        Ok(bytes)
    }

    /// The encoded size of a chunk, when no stage varies it.
    pub fn encoded_size(&self) -> Option<usize> {
        self.encoded_size
    }

    /// Whether chunks decode to text lines: the array -> bytes codec is
    /// `vlen-utf8`/`vlen-bytes`, or sharding over them.
    pub fn is_varlen(&self) -> bool {
        decodes_to_lines(&self.array_to_bytes)
    }

    /// The sharding codec, when it is the whole chain and its elements have
    /// a fixed size: then a shard can be decoded partially, straight from
    /// byte ranges of the stored object.
    pub fn partial_sharding(&self) -> Option<&ShardingCodec> {
        match &self.array_to_bytes {
            ArrayToBytes::Sharding(s)
                if self.array_to_array.is_empty()
                    && self.bytes_to_bytes.is_empty()
                    && s.data_type.element_size().is_some() =>
            {
                Some(s)
            }
            _ => None,
        }
    }

    /// Decode one stored chunk into the decoded chunk (C order, native).
    pub fn decode(&self, encoded: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        self.decode_stages(encoded, self.bytes_to_bytes.len())
    }

    /// Whether [`CodecChain::decode_from`] leaves the stored bytes' buffer
    /// to the caller: the first decoding step is a compressor, which reads
    /// its input and writes a fresh buffer.
    pub fn decodes_borrowed(&self) -> bool {
        self.bytes_to_bytes
            .last()
            .is_some_and(|(codec, _)| codec.is_compressor())
    }

    /// Decode one stored chunk as [`CodecChain::decode`] does, from the
    /// caller's buffer: borrowed when [`CodecChain::decodes_borrowed`] (the
    /// buffer is left as it was, for reuse), else taken (the stored bytes
    /// become the decoded ones in place, and `encoded` is left empty).
    pub fn decode_from(&self, encoded: &mut Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let stages = self.bytes_to_bytes.len();
        if let Some((codec, expected)) = self.bytes_to_bytes.last()
            && let Some(first) = codec.decode_borrowed(encoded, *expected, self.limit)
        {
            return self.decode_stages(first?, stages - 1);
        }
        self.decode(std::mem::take(encoded))
    }

    /// Decode with the first `stages` bytes -> bytes codecs still to undo.
    fn decode_stages(&self, encoded: Vec<u8>, stages: usize) -> Result<Vec<u8>, CodecError> {
        let mut bytes = encoded;
        for (codec, expected) in self.bytes_to_bytes[..stages].iter().rev() {
            bytes = codec.decode(bytes, *expected, self.limit)?;
        }
        let elements: u64 = self.bytes_shape.iter().product();
        let mut array = match &self.array_to_bytes {
            ArrayToBytes::Bytes(b) => b.decode(bytes, &self.data_type, elements as usize)?,
            ArrayToBytes::Sharding(s) => s.decode(bytes)?,
            ArrayToBytes::N5(c) => c.decode(bytes)?,
            ArrayToBytes::Pcodec => super::pcodec::decode(&bytes, &self.data_type, elements as usize)?,
            ArrayToBytes::PackBits(c) => c.decode(&bytes, elements as usize)?,
            ArrayToBytes::Zfp(mode) => super::zfp::decode(&bytes, &self.data_type, &self.bytes_shape, mode.as_ref())?,
            ArrayToBytes::VarLen { bytes: b } => {
                let name = if *b { "vlen-bytes" } else { "vlen-utf8" };
                super::vlen::decode(&bytes, elements as usize, name)?
            }
        };
        for (codec, decoded_shape, decoded_type) in self.array_to_array.iter().rev() {
            array = match codec {
                // Variable-length values are lines of text: reordered whole.
                ArrayToArray::Transpose(t) if decoded_type.element_size().is_none() => {
                    super::vlen::permute_lines(&array, &t.source_indices(decoded_shape))
                }
                ArrayToArray::Transpose(t) => t.decode(&array, decoded_shape, decoded_type.size()),
                ArrayToArray::ScaleOffset(c) => c.decode(array)?,
                ArrayToArray::CastValue(c) => c.decode(array)?,
                ArrayToArray::Filter(f) => {
                    let expected = decoded_shape.iter().product::<u64>() as usize * decoded_type.size();
                    let out = f.decode(array, self.limit)?;
                    if out.len() != expected {
                        return Err(CodecError::SizeMismatch {
                            codec: f.name(),
                            expected,
                            got: out.len(),
                        });
                    }
                    out
                }
            };
        }
        Ok(array)
    }
}

#[cfg(test)]
mod tests;
