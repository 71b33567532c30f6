//! The `bytes -> bytes` codecs of numcodecs, in numcodecs' own byte formats
//! (numcodecs defines them; the tests decode what numcodecs 0.16 writes).
//! One implementation serves Zarr v2 (`compressor`, checksum `filters`) and
//! zarr-python 3's `numcodecs.*` names in v3.
//!
//! - `zlib`: an RFC 1950 stream; `gzip`: RFC 1952 (the v3 `gzip` codec);
//!   `bz2`: a bzip2 stream; `zstd` and `blosc`: as the v3 codecs.
//! - `lz4`: a little-endian u32 of the decoded size, then one LZ4 block.
//! - `lzma`: an `.xz` container (numcodecs' default), or the legacy `.lzma`
//!   ("alone") format. Raw LZMA streams with custom filters are refused.
//! - `crc32`, `adler32`: the zlib checksum of the payload as a little-endian
//!   u32, at the `start` (default) or the `end` (`location`).
//! - `fletcher32`: HDF5's Fletcher-32 of the payload, appended (LE u32).
//! - `jenkins_lookup3`: Bob Jenkins' `hashlittle` of `prefix + payload`
//!   seeded with `initval`, appended (LE u32), as HDF5 computes it.
//!
//! Invariant: every decoder stops at the caller's limit, whatever the input
//! claims; a checksum mismatch is an error naming the codec.

use std::io::Write;

use super::{CodecError, read_bounded};
use crate::zarr::json::Value;
use crate::zarr::metadata::MetadataError;

/// A numcodecs compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compressor {
    Zlib,
    Bz2,
    Lz4,
    Lzma,
}

impl Compressor {
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Zlib => "zlib",
            Compressor::Bz2 => "bz2",
            Compressor::Lz4 => "lz4",
            Compressor::Lzma => "lzma",
        }
    }

    pub fn decode(self, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            Compressor::Zlib => read_bounded(flate2::read::ZlibDecoder::new(input), limit, "zlib"),
            Compressor::Bz2 => read_bounded(bzip2::read::MultiBzDecoder::new(input), limit, "bz2"),
            Compressor::Lz4 => lz4(input, limit),
            Compressor::Lzma => lzma(input, limit),
        }
    }
}

fn lz4(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let Some((head, block)) = input.split_first_chunk::<4>() else {
        return Err(CodecError::Truncated {
            codec: "lz4",
            len: input.len(),
        });
    };
    let n = u32::from_le_bytes(*head) as usize;
    if n > limit {
        return Err(CodecError::TooLarge { codec: "lz4", limit });
    }
    let mut out = vec![0u8; n];
    let got = lz4_flex::block::decompress_into(block, &mut out).map_err(|e| CodecError::Corrupt {
        codec: "lz4",
        reason: e.to_string(),
    })?;
    if got != n {
        return Err(CodecError::SizeMismatch {
            codec: "lz4",
            expected: n,
            got,
        });
    }
    Ok(out)
}

/// A writer that refuses to grow past `limit` bytes.
struct Bounded {
    out: Vec<u8>,
    limit: usize,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.limit {
            return Err(std::io::Error::other("output limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn lzma(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut w = Bounded { out: Vec::new(), limit };
    let mut reader = std::io::BufReader::new(input);
    let result = if input.starts_with(b"\xfd7zXZ\0") {
        lzma_rs::xz_decompress(&mut reader, &mut w)
    } else {
        // The "alone" format's 13-byte header claims a size; cap the
        // dictionary-independent output through the bounded writer.
        let options = lzma_rs::decompress::Options {
            memlimit: Some(limit.saturating_add(1 << 20)),
            ..Default::default()
        };
        lzma_rs::lzma_decompress_with_options(&mut reader, &mut w, &options)
    };
    match result {
        Ok(()) => Ok(w.out),
        Err(_) if w.out.len() >= limit && limit > 0 => Err(CodecError::TooLarge { codec: "lzma", limit }),
        Err(e) => Err(CodecError::Corrupt {
            codec: "lzma",
            reason: e.to_string(),
        }),
    }
}

/// A numcodecs checksum codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    Crc32 { at_start: bool },
    Adler32 { at_start: bool },
    Fletcher32,
    JenkinsLookup3 { initval: u32, prefix: Vec<u8> },
}

impl Checksum {
    /// Parse a checksum codec's configuration (`id` is `crc32`, …).
    pub fn from_configuration(id: &str, config: Option<&Value>) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: id.into(),
            reason,
        };
        let get = |k: &str| config.and_then(|c| c.get(k)).filter(|v| !matches!(v, Value::Null));
        let at_start = || match get("location").map(|v| v.as_str()) {
            None | Some(Some("start")) => Ok(true),
            Some(Some("end")) => Ok(false),
            Some(_) => Err(bad("location is not \"start\" or \"end\"".into())),
        };
        Ok(match id {
            "crc32" => Checksum::Crc32 { at_start: at_start()? },
            "adler32" => Checksum::Adler32 { at_start: at_start()? },
            "fletcher32" => Checksum::Fletcher32,
            "jenkins_lookup3" => {
                let initval = match get("initval") {
                    None => 0,
                    Some(v) => v
                        .as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| bad(format!("initval {v} is not a u32")))?,
                };
                let prefix = match get("prefix") {
                    None => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                        .collect::<Option<Vec<u8>>>()
                        .ok_or_else(|| bad("prefix is not a list of bytes".into()))?,
                    Some(v) => return Err(bad(format!("prefix {v} is not a list of bytes"))),
                };
                Checksum::JenkinsLookup3 { initval, prefix }
            }
            other => return Err(bad(format!("`{other}` is not a checksum"))),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Checksum::Crc32 { .. } => "crc32",
            Checksum::Adler32 { .. } => "adler32",
            Checksum::Fletcher32 => "fletcher32",
            Checksum::JenkinsLookup3 { .. } => "jenkins_lookup3",
        }
    }

    /// Verify and strip the checksum.
    pub fn decode(&self, mut input: Vec<u8>) -> Result<Vec<u8>, CodecError> {
        let codec = self.name();
        let Some(body) = input.len().checked_sub(4) else {
            return Err(CodecError::Truncated {
                codec,
                len: input.len(),
            });
        };
        let at_start = matches!(
            self,
            Checksum::Crc32 { at_start: true } | Checksum::Adler32 { at_start: true }
        );
        let (stored_at, payload) = if at_start { (0, 4..input.len()) } else { (body, 0..body) };
        let stored = u32::from_le_bytes(input[stored_at..stored_at + 4].try_into().expect("4 bytes"));
        let data = &input[payload];
        let computed = match self {
            Checksum::Crc32 { .. } => {
                let mut h = flate2::Crc::new();
                h.update(data);
                h.sum()
            }
            Checksum::Adler32 { .. } => adler32(data),
            Checksum::Fletcher32 => fletcher32(data),
            Checksum::JenkinsLookup3 { initval, prefix } => {
                if prefix.is_empty() {
                    lookup3(data, *initval)
                } else {
                    lookup3(&[prefix.as_slice(), data].concat(), *initval)
                }
            }
        };
        if stored != computed {
            return Err(CodecError::ChecksumMismatch {
                codec,
                stored,
                computed,
            });
        }
        if at_start {
            input.drain(..4);
        } else {
            input.truncate(body);
        }
        Ok(input)
    }
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// HDF5's Fletcher-32: big-endian 16-bit words, an odd last byte as the
/// high half of a word, sums folded every 360 words.
fn fletcher32(data: &[u8]) -> u32 {
    let (mut s1, mut s2) = (0u32, 0u32);
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    for block in data.chunks(720) {
        for w in block.chunks(2) {
            s1 += if w.len() == 2 {
                u32::from(u16::from_be_bytes([w[0], w[1]]))
            } else {
                u32::from(w[0]) << 8
            };
            s2 += s1;
        }
        s1 = fold(s1);
        s2 = fold(s2);
    }
    s1 = fold(s1);
    s2 = fold(s2);
    (s2 << 16) | s1
}

/// Bob Jenkins' lookup3 `hashlittle` (public domain), byte by byte.
fn lookup3(key: &[u8], initval: u32) -> u32 {
    let init = 0xdead_beefu32.wrapping_add(key.len() as u32).wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |k: &[u8]| {
        let mut w = [0u8; 4];
        w[..k.len()].copy_from_slice(k);
        u32::from_le_bytes(w)
    };
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        // mix(a, b, c)
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(4);
        b = b.wrapping_add(a);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]));
    }
    // final(a, b, c)
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_known_values() {
        // Published vectors: adler32("Wikipedia") and lookup3's driver
        // ("Four score and seven years ago", seeds 0 and 1).
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(lookup3(b"", 0), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(lookup3(b"Four score and seven years ago", 1), 0xcd62_8161);
        let mut enc = 0x11E6_0398u32.to_le_bytes().to_vec();
        enc.extend(b"Wikipedia");
        let c = Checksum::Adler32 { at_start: true };
        assert_eq!(c.decode(enc.clone()).unwrap(), b"Wikipedia");
        enc[5] ^= 1;
        assert!(matches!(c.decode(enc), Err(CodecError::ChecksumMismatch { .. })));
        assert!(matches!(c.decode(vec![1]), Err(CodecError::Truncated { .. })));
    }

    #[test]
    fn lz4_header_is_bounded() {
        // One LZ4 sequence of 11 literals and no match.
        let data = b"hello world";
        let mut enc = (data.len() as u32).to_le_bytes().to_vec();
        enc.push(0xB0);
        enc.extend(data);
        assert_eq!(Compressor::Lz4.decode(&enc, 11).unwrap(), data);
        assert!(matches!(
            Compressor::Lz4.decode(&enc, 10),
            Err(CodecError::TooLarge { .. })
        ));
        let mut bomb = u32::MAX.to_le_bytes().to_vec();
        bomb.extend([0u8; 8]);
        assert!(Compressor::Lz4.decode(&bomb, 1 << 20).is_err());
        assert!(Compressor::Lzma.decode(b"not lzma at all", 100).is_err());
        assert!(Compressor::Bz2.decode(b"BZh9garbage", 100).is_err());
    }
}
