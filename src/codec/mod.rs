//! The codec pipeline, modelled the way the spec models it.
//!
//! Three kinds of codec (`array -> array`, `array -> bytes`,
//! `bytes -> bytes`), one file each, and [`chain::CodecChain`] which works out
//! every stage's representation (shape, data type) from the metadata before
//! anything is decoded. Sharding is an [`ArrayToBytes`] codec that owns
//! chains of its own, so nested sharding needs nothing special.
//!
//! Invariants: decoding never allocates more than the size the chain expects
//! plus a small slack, whatever the encoded bytes claim (blosc headers are
//! checked before allocating; zstd windows are capped by the expected size);
//! every failure is a
//! [`CodecError`], never a panic.
//!
//! Encoding runs the same chain forwards ([`chain::CodecChain::encode`]):
//! each codec that encodes does so in its own file, from the configuration
//! its variant keeps, and a chain with any other codec says which one
//! ([`EncodeError::NotEncodable`]) before a chunk is encoded. What encodes
//! decodes, through the same chain, to the bytes that were encoded.

pub mod blosc;
pub mod bytes;
pub mod cast_value;
pub mod chain;
pub mod conditional;
pub mod crc32c;
pub mod filter;
pub mod gzip;
pub mod lzma;
pub mod n5;
pub mod numcodecs;
pub mod packbits;
pub mod pcodec;
pub mod reshape;
pub mod scale_offset;
pub mod sharding;
pub mod transpose;
pub mod vlen;
pub mod zfp;
pub mod zstd;

pub use chain::CodecChain;

/// The first member of a codec's `configuration` that is not in `known`
/// (the zarr-extensions codecs refuse what they do not know).
pub(crate) fn unknown_member<'a>(config: Option<&'a crate::json::Value>, known: &[&str]) -> Option<&'a str> {
    config
        .and_then(crate::json::Value::as_object)?
        .iter()
        .map(|(k, _)| k.as_str())
        .find(|k| !known.contains(k))
}

use std::io::Read;

/// Why an encoded chunk could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The decoded size is not the one the chunk must have.
    #[error("{codec}: decoded {got} bytes, expected {expected}")]
    SizeMismatch {
        /// The codec's name.
        codec: &'static str,
        /// The bytes the chunk must have.
        expected: usize,
        /// The bytes it decoded to.
        got: usize,
    },
    /// The output would pass the limit its chunk allows.
    #[error("{codec}: output exceeds the {limit}-byte limit (corrupt data or decompression bomb)")]
    TooLarge {
        /// The codec's name.
        codec: &'static str,
        /// The most bytes the output may have.
        limit: usize,
    },
    /// A stored checksum is not the checksum of the bytes.
    #[error("{codec}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch {
        /// The codec's name.
        codec: &'static str,
        /// The checksum the input holds.
        stored: u32,
        /// The checksum of its bytes.
        computed: u32,
    },
    /// The input ends before its format says it does.
    #[error("{codec}: input too short ({len} bytes)")]
    Truncated {
        /// The codec's name.
        codec: &'static str,
        /// The input's length.
        len: usize,
    },
    /// The input is not in the codec's format.
    #[error("{codec}: {reason}")]
    Corrupt {
        /// The codec's name.
        codec: &'static str,
        /// What is wrong, in words.
        reason: String,
    },
}

/// Why a decoded chunk could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The chain holds a codec nzfs does not encode.
    #[error(
        "its codec `{codec}` is not encoded ({reason}; nzfs encodes transpose, reshape, bytes, zstd, gzip and crc32c)"
    )]
    NotEncodable {
        /// The codec's name.
        codec: String,
        /// Why, in words.
        reason: &'static str,
    },
    /// The chunk is not the size the chain encodes.
    #[error("{codec}: a chunk of {got} bytes, expected {expected}")]
    SizeMismatch {
        /// The codec's name.
        codec: &'static str,
        /// The bytes the chunk must have.
        expected: usize,
        /// The bytes it has.
        got: usize,
    },
    /// The codec's library failed.
    #[error("{codec}: {reason}")]
    Failed {
        /// The codec's name.
        codec: &'static str,
        /// What went wrong, in words.
        reason: String,
    },
}

/// An `array -> array` codec.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayToArray {
    /// `transpose`.
    Transpose(transpose::Transpose),
    /// zarr-extensions' `scale_offset`.
    ScaleOffset(scale_offset::ScaleOffset),
    /// zarr-extensions' `cast_value`.
    CastValue(cast_value::CastValue),
    /// A numcodecs filter on the native in-memory array (zarr-python 3's
    /// `numcodecs.*` array -> array codecs).
    Filter(filter::Filter),
}

/// The one `array -> bytes` codec of a chain.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayToBytes {
    /// `bytes`: the elements as they are, in an endianness.
    Bytes(bytes::BytesCodec),
    /// `numcodecs.pcodec`.
    Pcodec,
    /// `numcodecs.zfpy` (`None`: the chunk's header gives the mode) and
    /// zarr-extensions' `zfp` (the configuration's mode), through the zfp
    /// library.
    Zfp(Option<zfp::Mode>),
    /// zarr-extensions' `packbits`.
    PackBits(packbits::PackBits),
    /// `vlen-utf8` (`false`) or `vlen-bytes` (`true`).
    VarLen {
        /// Whether the elements are bytes (`vlen-bytes`), not text.
        bytes: bool,
    },
    /// `sharding_indexed`: inner chunks in one object, with an index.
    Sharding(Box<sharding::ShardingCodec>),
    /// `n5_default`: an N5 block, its header and its own codecs.
    N5(Box<n5::N5Default>),
}

/// A `bytes -> bytes` codec.
#[derive(Debug, Clone, PartialEq)]
pub enum BytesToBytes {
    /// `zstd` (and numcodecs' `zstd`), with the level and checksum it
    /// encodes with.
    Zstd(zstd::Zstd),
    /// `gzip` (and numcodecs' `gzip`), with the level it encodes with.
    Gzip(gzip::Gzip),
    /// `blosc` (and numcodecs' `blosc`).
    Blosc,
    /// `crc32c`: a checksum at the end.
    Crc32c,
    /// A numcodecs compressor with no Zarr v3 codec of its own.
    Numcodecs(numcodecs::Compressor),
    /// A numcodecs checksum.
    Checksum(numcodecs::Checksum),
    /// A numcodecs filter on stored bytes (a Zarr v2 filter, or `shuffle`).
    Filter(filter::Filter),
    /// `conditional`: codecs each chunk's header says were applied.
    Conditional(Box<conditional::Conditional>),
}

impl BytesToBytes {
    /// Its name in metadata, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            BytesToBytes::Zstd(_) => "zstd",
            BytesToBytes::Gzip(_) => "gzip",
            BytesToBytes::Blosc => "blosc",
            BytesToBytes::Crc32c => "crc32c",
            BytesToBytes::Numcodecs(c) => c.name(),
            BytesToBytes::Checksum(c) => c.name(),
            BytesToBytes::Filter(f) => f.name(),
            BytesToBytes::Conditional(_) => "conditional",
        }
    }

    /// Decode `input`; `expected` is the exact decoded size when the chain
    /// knows it, and `limit` the most that may be produced in any case.
    pub fn decode(&self, input: Vec<u8>, expected: Option<usize>, limit: usize) -> Result<Vec<u8>, CodecError> {
        // When the size is known exactly, one byte more is already too many.
        let limit = expected.map_or(limit, |e| e.min(limit));
        let out = match self {
            BytesToBytes::Crc32c => crc32c::decode(input)?,
            BytesToBytes::Checksum(c) => c.decode(input)?,
            BytesToBytes::Filter(f) => f.decode(input, limit)?,
            BytesToBytes::Conditional(c) => c.decode(input, limit)?,
            BytesToBytes::Zstd(_) | BytesToBytes::Gzip(_) | BytesToBytes::Blosc | BytesToBytes::Numcodecs(_) => {
                self.decompress(&input, limit)?
            }
        };
        Self::check_size(self.name(), out, expected)
    }

    /// The codecs that read their input and write a fresh buffer (the
    /// others work in place on the buffer they are given).
    pub fn is_compressor(&self) -> bool {
        matches!(
            self,
            BytesToBytes::Zstd(_) | BytesToBytes::Gzip(_) | BytesToBytes::Blosc | BytesToBytes::Numcodecs(_)
        )
    }

    /// Decode `input` without taking it, as [`BytesToBytes::decode`] does,
    /// for the codecs that read their input and write a fresh buffer (the
    /// compressors); `None` for the others, which work in place.
    pub fn decode_borrowed(
        &self,
        input: &[u8],
        expected: Option<usize>,
        limit: usize,
    ) -> Option<Result<Vec<u8>, CodecError>> {
        if !self.is_compressor() {
            return None;
        }
        let limit = expected.map_or(limit, |e| e.min(limit));
        Some(
            self.decompress(input, limit)
                .and_then(|out| Self::check_size(self.name(), out, expected)),
        )
    }

    /// A compressor's decode; the in-place codecs are refused here.
    fn decompress(&self, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            BytesToBytes::Zstd(_) => zstd::decode(input, limit),
            BytesToBytes::Gzip(_) => gzip::decode(input, limit),
            BytesToBytes::Blosc => blosc::decode(input, limit),
            BytesToBytes::Numcodecs(c) => c.decode(input, limit),
            BytesToBytes::Crc32c
            | BytesToBytes::Checksum(_)
            | BytesToBytes::Filter(_)
            | BytesToBytes::Conditional(_) => Err(CodecError::Corrupt {
                codec: self.name(),
                reason: "decoded in place, not from borrowed bytes".into(),
            }),
        }
    }

    fn check_size(codec: &'static str, out: Vec<u8>, expected: Option<usize>) -> Result<Vec<u8>, CodecError> {
        match expected {
            Some(n) if n != out.len() => Err(CodecError::SizeMismatch {
                codec,
                expected: n,
                got: out.len(),
            }),
            _ => Ok(out),
        }
    }

    /// Encode `input`: the inverse of [`BytesToBytes::decode`], for the
    /// codecs nzfs encodes.
    pub fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        match self {
            BytesToBytes::Zstd(z) => z.encode(&input),
            BytesToBytes::Gzip(g) => g.encode(&input),
            BytesToBytes::Crc32c => Ok(crc32c::encode(input)),
            other => Err(other.not_encodable()),
        }
    }

    /// Whether [`BytesToBytes::encode`] encodes it; why not, if not.
    pub fn encodable(&self) -> Result<(), EncodeError> {
        match self {
            BytesToBytes::Zstd(_) | BytesToBytes::Gzip(_) | BytesToBytes::Crc32c => Ok(()),
            other => Err(other.not_encodable()),
        }
    }

    fn not_encodable(&self) -> EncodeError {
        EncodeError::NotEncodable {
            codec: self.name().into(),
            reason: "a bytes -> bytes codec nzfs only decodes",
        }
    }

    /// The encoded size for a decoded size, where the codec fixes it.
    /// `item` is the size of the elements the decoded bytes hold.
    pub fn encoded_size(&self, decoded: Option<usize>, item: usize) -> Option<usize> {
        match self {
            BytesToBytes::Crc32c | BytesToBytes::Checksum(_) => decoded.map(|n| n + 4),
            BytesToBytes::Filter(f) => f.encoded_size(decoded?, item),
            BytesToBytes::Zstd(_)
            | BytesToBytes::Gzip(_)
            | BytesToBytes::Blosc
            | BytesToBytes::Numcodecs(_)
            | BytesToBytes::Conditional(_) => None,
        }
    }
}

/// Read all of `reader` into a buffer, failing once it passes `limit` bytes.
/// The buffer is reserved once at `limit + 1` bytes and never grows, whatever
/// the input claims; a decoded chunk fills it exactly.
pub(crate) fn read_bounded(
    reader: impl std::io::Read,
    limit: usize,
    codec: &'static str,
) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(limit.saturating_add(1));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodecError::Corrupt {
            codec,
            reason: e.to_string(),
        })?;
    if out.len() > limit {
        return Err(CodecError::TooLarge { codec, limit });
    }
    Ok(out)
}
