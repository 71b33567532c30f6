//! The `bytes -> bytes` codecs of numcodecs, in numcodecs' own byte formats
//! (numcodecs defines them; the tests decode what numcodecs 0.16 writes).
//! One implementation serves Zarr v2 (`compressor`, checksum `filters`) and
//! zarr-python 3's `numcodecs.*` names in v3.
//!
//! - `zlib`: an RFC 1950 stream; `gzip`: RFC 1952 (the v3 `gzip` codec);
//!   `bz2`: a bzip2 stream; `zstd` and `blosc`: as the v3 codecs.
//! - `lz4`: a little-endian u32 of the decoded size, then one LZ4 block.
//! - `lzma`: every format Python's `lzma` module writes ([`super::lzma`]).
//! - `crc32`, `adler32`: the zlib checksum of the payload as a little-endian
//!   u32, at the `start` (default) or the `end` (`location`).
//! - `fletcher32`: HDF5's Fletcher-32 of the payload, appended (LE u32).
//! - `jenkins_lookup3`: Bob Jenkins' `hashlittle` of `prefix + payload`
//!   seeded with `initval`, appended (LE u32), as HDF5 computes it.
//!
//! Invariant: every decoder stops at the caller's limit, whatever the input
//! claims; a checksum mismatch is an error naming the codec.

use super::{CodecError, read_bounded};
use crate::json::Value;
use crate::zarr::metadata::MetadataError;

/// A numcodecs compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compressor {
    /// `zlib` (a zlib stream).
    Zlib,
    /// `bz2`.
    Bz2,
    /// `lz4`: numcodecs' block with its size in front.
    Lz4,
    /// `lzma` (xz, alone and raw LZMA).
    Lzma(super::lzma::Lzma),
}

impl Compressor {
    /// Its numcodecs `id`.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Zlib => "zlib",
            Compressor::Bz2 => "bz2",
            Compressor::Lz4 => "lz4",
            Compressor::Lzma(_) => "lzma",
        }
    }

    /// Decompress `input`, refusing more than `limit` bytes of output.
    pub fn decode(self, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            Compressor::Zlib => read_bounded(flate2::read::ZlibDecoder::new(input), limit, "zlib"),
            Compressor::Bz2 => read_bounded(bzip2::read::MultiBzDecoder::new(input), limit, "bz2"),
            Compressor::Lz4 => lz4(input, limit),
            Compressor::Lzma(l) => l.decode(input, limit),
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

/// A numcodecs checksum codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// `crc32`: a CRC-32 of the data.
    Crc32 {
        /// Whether it precedes the data (`location: "start"`).
        at_start: bool,
    },
    /// `adler32`: an Adler-32 of the data.
    Adler32 {
        /// Whether it precedes the data (`location: "start"`).
        at_start: bool,
    },
    /// `fletcher32`: two 16-bit sums after the data.
    Fletcher32,
    /// `jenkins_lookup3`: a lookup3 hash after the data.
    JenkinsLookup3 {
        /// The hash's initial value.
        initval: u32,
        /// Bytes hashed ahead of the data.
        prefix: Vec<u8>,
    },
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

    /// Its numcodecs `id`.
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

    fn unhex(parts: &[&str]) -> Vec<u8> {
        let s: String = parts.concat();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Python's `lzma.compress` (what numcodecs' LZMA calls) of 1 MiB of
    /// zeros, as `.xz` and as the legacy "alone" format, and of a short text.
    const XZ_ZEROS: &[&str] = &[
        "fd377a585a000004e6d6b4460200210116000000742fe5a3efffff00d95d00006ffdffffa3b7ff47",
        "3e481572396151b89228e6a38607f9eee41e82d32fc53a3c014bb17ec98a8a4d2fa30dd97fa6e38c",
        "231153e05918c5758ae277f8b6947f0c6ac0de744964e2e95c53b204d8f7440cab5f0d6d46e9e5c3",
        "7688b79657acb64de1691d6ffb4b88106c42cb883f5c008fd04eaf262894711f3d8f24e1709ea723",
        "5fec28cb85d195988a7e2a91f22775f719c006984d98fdd8afd5900fc42553f8f591363105a5b0ee",
        "6fc1704d470cd19111aaad601dbaceb127185c5986e9665258bee976ac59e4e55b0508f9c7daadfc",
        "fb522af7e495250000000000c2f6ba3ea2706b600001f5018080400079977f47b1c467fb02000000",
        "0004595a",
    ];
    const ALONE_ZEROS: &[&str] = &[
        "5d00008000ffffffffffffffff00006ffdffffa3b7ff473e481572396151b89228e6a38607f9eee4",
        "1e82d32fc53a3c014bb17ec98a8a4d2fa30dd97fa6e38c231153e05918c5758ae277f8b6947f0c6a",
        "c0de744964e2e95c53b204d8f7440cab5f0d6d46e9e5c37688b79657acb64de1691d6ffb4b88106c",
        "42cb883f5c008fd04eaf262894711f3d8f24e1709ea7235fec28cb85d195988a7e2a91f22775f719",
        "c006984d98fdd8afd5900fc42553f8f591363105a5b0ee6fc1704d470cd19111aaad601dbaceb127",
        "185c5986e9665258bee976ac59e4e55b0508f9c7daadfcfb522af7e51cdccfffff82160000",
    ];
    const XZ_HELLO: &[&str] = &[
        "fd377a585a000004e6d6b4460200210116000000742fe5a301000f68656c6c6f2c206e756d636f64",
        "6563730080eb3ae8f4b7438000012810e50b6c601fb6f37d010000000004595a",
    ];
    /// An `.xz` stream whose footer claims a backward size of u32::MAX: the
    /// input with which `scripts/fuzz.sh` made lzma-rs 0.3 panic on an
    /// integer overflow (CI, stop 26). It must be an error.
    const XZ_FOOTER_OVERFLOW: &[&str] = &[
        "fd377a585a000004e6d6b4460200210116000000742fe5a30100df1615f5f7cf5dfebf104ad9ac",
        "dd5408c0a5561dab1feb26c0334a71c0089720407c1925f706603a4028a035a5b7de3840f8809142",
        "76183c40b6f34e8fad7c3a40fc1ce22ba3454840032505bd731b4440cb09ccea64db3a40a3c4d260",
        "61f63640269bb80c1f1328404455c551d4761dc02c24dbc5f7e005c0f07a6ff97a4a12c05713d0c4",
        "cc6023404a02847ed4c01440762ad0a9cd8235401839a420a29f4040162cf91b00b84540b5d4cb83",
        "254b364061e097a3c70b4140842858e8908838403209ab8fd66053403a104c1482135440c2faf1ef",
        "932652404b012142f3235340008be759e960956ae00001f801e0010000164d49d0b1c4ffffffffff",
        "ffffff67fb02000000c05713d0c4cc6023404a02847ed4c01440762ad0a9cd8235401839a420a29f",
        "4040162cf90004595a",
    ];

    #[test]
    fn lzma_decodes_what_python_writes_and_stops_at_the_limit() {
        assert_eq!(
            Compressor::Lzma(super::super::lzma::Lzma::Container)
                .decode(&unhex(XZ_HELLO), 64)
                .unwrap(),
            b"hello, numcodecs"
        );
        for stream in [XZ_ZEROS, ALONE_ZEROS] {
            let enc = unhex(stream);
            assert_eq!(
                Compressor::Lzma(super::super::lzma::Lzma::Container)
                    .decode(&enc, 1 << 20)
                    .unwrap(),
                vec![0u8; 1 << 20]
            );
            assert!(matches!(
                Compressor::Lzma(super::super::lzma::Lzma::Container).decode(&enc, 4096),
                Err(CodecError::TooLarge {
                    codec: "lzma",
                    limit: 4096
                })
            ));
        }
        // A flipped payload bit fails the stream's CRC64 check.
        let mut bad = unhex(XZ_HELLO);
        bad[26] ^= 1;
        assert!(
            Compressor::Lzma(super::super::lzma::Lzma::Container)
                .decode(&bad, 64)
                .is_err()
        );
    }

    #[test]
    fn a_hostile_xz_footer_is_an_error_not_a_panic() {
        let enc = unhex(XZ_FOOTER_OVERFLOW);
        for limit in [256, 1 << 16] {
            assert!(matches!(
                Compressor::Lzma(super::super::lzma::Lzma::Container).decode(&enc, limit),
                Err(CodecError::Corrupt { codec: "lzma", .. })
            ));
        }
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
        assert!(
            Compressor::Lzma(super::super::lzma::Lzma::Container)
                .decode(b"not lzma at all", 100)
                .is_err()
        );
        assert!(Compressor::Bz2.decode(b"BZh9garbage", 100).is_err());
    }
}
