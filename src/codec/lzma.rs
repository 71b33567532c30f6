//! numcodecs' `lzma` (Python's `lzma` module), in each format it writes:
//! `format: 1` an `.xz` container (the default; concatenated streams are
//! allowed, as Python allows them), `2` the legacy `.lzma` ("alone") file,
//! and `3` a raw stream whose filter chain the configuration's `filters`
//! gives: up to three of delta and the BCJ filters (x86, PowerPC, IA-64 is
//! refused, ARM, ARM-Thumb, SPARC, ARM64), then LZMA1 or LZMA2, in
//! Python's order (the first is applied first when writing, so undone
//! last). `format: 0` (auto) reads either container.
//!
//! Invariants: decoding stops at the caller's limit, whatever the stream
//! claims; lzma-rust2 grows its dictionary window with the output, and the
//! window a raw stream is read with is at most the limit (no match can
//! reach further back than the output), so the limit also bounds memory; a
//! chain nzfs cannot read is refused when the array is opened, naming the
//! filter.

use std::io::Read;

use super::{CodecError, read_bounded};
use crate::json::Value;
use crate::zarr::metadata::MetadataError;

/// How the chunks of one array were compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lzma {
    /// `.xz` or `.lzma`, told apart by the stream's first bytes.
    Container,
    /// A raw stream with this filter chain.
    Raw(RawChain),
}

/// A raw stream's filters in Python's order: `pre[..n]`, then `last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawChain {
    pre: [Pre; 3],
    n: usize,
    last: Last,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pre {
    Delta(usize),
    Bcj(Bcj, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bcj {
    X86,
    PowerPc,
    Arm,
    ArmThumb,
    Sparc,
    Arm64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Lzma1 { lc: u32, lp: u32, pb: u32 },
    Lzma2,
}

// Python's lzma.FILTER_* values.
const FILTER_LZMA1: u64 = 0x4000_0000_0000_0001;
const FILTER_LZMA2: u64 = 0x21;
const FILTER_DELTA: u64 = 0x03;
const FILTER_X86: u64 = 0x04;
const FILTER_POWERPC: u64 = 0x05;
const FILTER_IA64: u64 = 0x06;
const FILTER_ARM: u64 = 0x07;
const FILTER_ARMTHUMB: u64 = 0x08;
const FILTER_SPARC: u64 = 0x09;
const FILTER_ARM64: u64 = 0x0a;

impl Lzma {
    /// The codec a numcodecs `lzma` configuration describes.
    pub fn from_configuration(config: Option<&Value>) -> Result<Lzma, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: "lzma".into(),
            reason,
        };
        let get = |c: &Value, k: &str| c.get(k).filter(|v| !matches!(v, Value::Null)).cloned();
        let format = match config.and_then(|c| get(c, "format")) {
            None => 1,
            Some(v) => v.as_u64().ok_or_else(|| bad(format!("format {v} is not 0 to 3")))?,
        };
        let filters = config.and_then(|c| get(c, "filters"));
        match format {
            0..=2 if filters.is_none() => Ok(Lzma::Container),
            0..=2 => Err(bad("filters are only for format 3 (raw)".into())),
            3 => {
                let Some(Value::Array(filters)) = filters else {
                    return Err(bad("format 3 (raw) needs a list of filters".into()));
                };
                RawChain::parse(&filters).map(Lzma::Raw)
            }
            other => Err(bad(format!("format {other} is not 0 to 3"))),
        }
    }

    /// Decompress `input`, refusing more than `limit` bytes of output.
    pub fn decode(self, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        let corrupt = |e: std::io::Error| CodecError::Corrupt {
            codec: "lzma",
            reason: e.to_string(),
        };
        match self {
            Lzma::Container if input.starts_with(b"\xfd7zXZ\0") => {
                read_bounded(lzma_rust2::XzReader::new(input, true), limit, "lzma")
            }
            Lzma::Container => {
                let reader = lzma_rust2::LzmaReader::new_mem_limit(input, u32::MAX, None).map_err(corrupt)?;
                read_bounded(reader, limit, "lzma")
            }
            Lzma::Raw(chain) => {
                // The window: at most what may be decoded (see the module
                // doc), and at least LZMA's smallest.
                let dict = u32::try_from(limit).unwrap_or(u32::MAX).max(4096);
                let mut reader: Box<dyn Read + '_> = match chain.last {
                    Last::Lzma2 => Box::new(lzma_rust2::Lzma2Reader::new(input, dict, None)),
                    Last::Lzma1 { lc, lp, pb } => {
                        Box::new(lzma_rust2::LzmaReader::new(input, u64::MAX, lc, lp, pb, dict, None).map_err(corrupt)?)
                    }
                };
                for pre in chain.pre[..chain.n].iter().rev() {
                    use lzma_rust2::filter::bcj::BcjReader;
                    reader = match *pre {
                        Pre::Delta(dist) => Box::new(lzma_rust2::filter::delta::DeltaReader::new(reader, dist)),
                        Pre::Bcj(Bcj::X86, at) => Box::new(BcjReader::new_x86(reader, at)),
                        Pre::Bcj(Bcj::PowerPc, at) => Box::new(BcjReader::new_ppc(reader, at)),
                        Pre::Bcj(Bcj::Arm, at) => Box::new(BcjReader::new_arm(reader, at)),
                        Pre::Bcj(Bcj::ArmThumb, at) => Box::new(BcjReader::new_arm_thumb(reader, at)),
                        Pre::Bcj(Bcj::Sparc, at) => Box::new(BcjReader::new_sparc(reader, at)),
                        Pre::Bcj(Bcj::Arm64, at) => Box::new(BcjReader::new_arm64(reader, at)),
                    };
                }
                read_bounded(reader, limit, "lzma")
            }
        }
    }
}

impl RawChain {
    fn parse(filters: &[Value]) -> Result<RawChain, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: "lzma".into(),
            reason,
        };
        let Some((last, pre)) = filters.split_last() else {
            return Err(bad("format 3 (raw) needs at least one filter".into()));
        };
        if pre.len() > 3 {
            return Err(bad(format!("{} filters: Python's lzma takes at most 4", filters.len())));
        }
        let id = |f: &Value| -> Result<u64, MetadataError> {
            f.get("id")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(format!("filter {f} has no numeric id")))
        };
        let num = |f: &Value, k: &str, default: u64, most: u64| -> Result<u64, MetadataError> {
            match f.get(k).filter(|v| !matches!(v, Value::Null)) {
                None => Ok(default),
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n <= most)
                    .ok_or_else(|| bad(format!("filter {f}: {k} {v} is not 0 to {most}"))),
            }
        };
        let last = match id(last)? {
            FILTER_LZMA2 => Last::Lzma2,
            FILTER_LZMA1 => Last::Lzma1 {
                lc: num(last, "lc", 3, 4)? as u32,
                lp: num(last, "lp", 0, 4)? as u32,
                pb: num(last, "pb", 2, 4)? as u32,
            },
            other => return Err(bad(format!("the last filter is {other:#x}, not LZMA1 or LZMA2"))),
        };
        let mut chain = RawChain {
            pre: [Pre::Delta(1); 3],
            n: pre.len(),
            last,
        };
        for (slot, f) in chain.pre.iter_mut().zip(pre) {
            let at = || num(f, "start_offset", 0, u32::MAX.into()).map(|n| n as usize);
            *slot = match id(f)? {
                FILTER_DELTA => match num(f, "dist", 1, 256)? {
                    0 => return Err(bad(format!("filter {f}: dist 0 is not 1 to 256"))),
                    d => Pre::Delta(d as usize),
                },
                FILTER_X86 => Pre::Bcj(Bcj::X86, at()?),
                FILTER_POWERPC => Pre::Bcj(Bcj::PowerPc, at()?),
                FILTER_ARM => Pre::Bcj(Bcj::Arm, at()?),
                FILTER_ARMTHUMB => Pre::Bcj(Bcj::ArmThumb, at()?),
                FILTER_SPARC => Pre::Bcj(Bcj::Sparc, at()?),
                FILTER_ARM64 => Pre::Bcj(Bcj::Arm64, at()?),
                FILTER_IA64 => return Err(bad("the IA-64 BCJ filter is not read by nzfs".into())),
                FILTER_LZMA1 | FILTER_LZMA2 => return Err(bad("LZMA1 or LZMA2 must be the last filter".into())),
                other => return Err(bad(format!("filter id {other:#x} is not one Python's lzma writes"))),
            };
        }
        Ok(chain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<Lzma, MetadataError> {
        Lzma::from_configuration(Some(&crate::json::parse(text.as_bytes()).unwrap()))
    }

    /// What numcodecs writes parses; every configuration Python's `lzma`
    /// would refuse, or nzfs cannot read, is refused naming why.
    #[test]
    fn configurations_parse_or_say_why_not() {
        assert_eq!(Lzma::from_configuration(None).unwrap(), Lzma::Container);
        assert_eq!(config(r#"{"format": 1, "filters": null}"#).unwrap(), Lzma::Container);
        let raw = config(r#"{"format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}"#).unwrap();
        assert!(matches!(
            raw,
            Lzma::Raw(RawChain {
                n: 1,
                last: Last::Lzma2,
                ..
            })
        ));
        for (bad, why) in [
            (r#"{"format": 3}"#, "needs a list of filters"),
            (r#"{"format": 3, "filters": []}"#, "at least one filter"),
            (r#"{"format": 7}"#, "not 0 to 3"),
            (r#"{"format": 1, "filters": [{"id": 33}]}"#, "only for format 3"),
            (
                r#"{"format": 3, "filters": [{"id": 33}, {"id": 3}]}"#,
                "not LZMA1 or LZMA2",
            ),
            (r#"{"format": 3, "filters": [{"id": 6}, {"id": 33}]}"#, "IA-64"),
            (
                r#"{"format": 3, "filters": [{"id": 3, "dist": 0}, {"id": 33}]}"#,
                "dist 0",
            ),
            (
                r#"{"format": 3, "filters": [{"id": 3, "dist": 300}, {"id": 33}]}"#,
                "dist 300",
            ),
            (r#"{"format": 3, "filters": [{"id": 99}, {"id": 33}]}"#, "0x63"),
            (
                r#"{"format": 3, "filters": [{"id": 3}, {"id": 3}, {"id": 3}, {"id": 3}, {"id": 33}]}"#,
                "at most 4",
            ),
            (
                r#"{"format": 3, "filters": [{"id": 4611686018427387905, "pb": 5}]}"#,
                "pb 5",
            ),
        ] {
            let e = config(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    /// A raw stream that is not one decodes to an error, never a panic,
    /// and no more than the limit comes out of a real one.
    #[test]
    fn garbage_and_limits() {
        let raw = config(r#"{"format": 3, "filters": [{"id": 33}]}"#).unwrap();
        assert!(raw.decode(b"not an lzma2 stream at all", 1 << 20).is_err());
        let lzma1 = config(r#"{"format": 3, "filters": [{"id": 4611686018427387905}]}"#).unwrap();
        assert!(lzma1.decode(&[0xff; 64], 1 << 20).is_err());
        assert!(raw.decode(&[], 10).is_err(), "an empty stream has no end");
    }
}
