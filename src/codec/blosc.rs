//! `blosc` (spec: zarr-v3/codecs/blosc.rst): the c-blosc 1.x container
//! format. Example: `{"name": "blosc", "configuration": {"cname": "lz4",
//! "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}`.
//! cname may be blosclz, lz4, lz4hc, zlib, zstd or snappy; shuffle
//! noshuffle, shuffle or bitshuffle. The configuration only matters when
//! encoding: the container header says how to decode.
//!
//! Decoding uses c-blosc itself (the `blosc-src` crate builds it from source
//! with all its compressors). The header is untrusted: it is validated with
//! `blosc_cbuffer_validate` and its claimed size checked against the
//! caller's limit before any output is allocated.

use super::CodecError;
use crate::json::Value;
use crate::zarr::metadata::MetadataError;

/// Check the configuration names values c-blosc knows.
pub fn check_configuration(config: Option<&Value>) -> Result<(), MetadataError> {
    let bad = |reason: String| MetadataError::BadCodec {
        codec: "blosc".into(),
        reason,
    };
    let Some(c) = config else { return Ok(()) };
    if let Some(cname) = c.get("cname") {
        match cname.as_str() {
            Some("blosclz" | "lz4" | "lz4hc" | "zlib" | "zstd" | "snappy") => {}
            _ => return Err(bad(format!("unknown cname {cname}"))),
        }
    }
    // The shuffle is in each chunk's header; the configuration's only says
    // how to write. Besides the spec's names and numcodecs' numbers (-1 is
    // its AUTOSHUFFLE), GDAL 3.6 writes "BIT", "BYTE" and "NONE", which
    // zarr-python accepts too.
    if let Some(shuffle) = c.get("shuffle") {
        match shuffle {
            Value::Str(s) if matches!(s.as_str(), "noshuffle" | "shuffle" | "bitshuffle") => {}
            Value::Int(-1..=2) => {}
            Value::Str(s) if matches!(s.to_ascii_lowercase().as_str(), "bit" | "byte" | "none") => {
                tracing::info!(shuffle = %s, "blosc shuffle {s:?} (GDAL's spelling): read as the chunks' headers say");
            }
            other => return Err(bad(format!("unknown shuffle {other}"))),
        }
    }
    Ok(())
}

/// Decompress a blosc frame, refusing more than `limit` bytes of output.
pub fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    const HEADER: usize = 16;
    if input.len() < HEADER {
        return Err(CodecError::Truncated {
            codec: "blosc",
            len: input.len(),
        });
    }
    let mut nbytes = 0usize;
    // SAFETY: the pointer and length describe `input`; validate reads only
    // within it and writes one usize.
    let rc = unsafe { blosc_src::blosc_cbuffer_validate(input.as_ptr().cast(), input.len(), &mut nbytes) };
    if rc != 0 {
        return Err(CodecError::Corrupt {
            codec: "blosc",
            reason: "invalid container header".into(),
        });
    }
    if nbytes > limit {
        return Err(CodecError::TooLarge { codec: "blosc", limit });
    }
    let mut out = vec![0u8; nbytes];
    if nbytes == 0 {
        return Ok(out);
    }
    // SAFETY: the header was validated for `input.len()` bytes; c-blosc
    // writes at most `nbytes` bytes into `out`, which has that length.
    let n = unsafe { blosc_src::blosc_decompress_ctx(input.as_ptr().cast(), out.as_mut_ptr().cast(), nbytes, 1) };
    if n < 0 || n as usize != nbytes {
        return Err(CodecError::Corrupt {
            codec: "blosc",
            reason: format!("decompression failed ({n})"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(data: &[u8], cname: &str, shuffle: i32, typesize: usize) -> Vec<u8> {
        let mut out = vec![0u8; data.len() + 64];
        let cname = std::ffi::CString::new(cname).unwrap();
        // SAFETY: buffers sized as c-blosc requires (input + overhead).
        let n = unsafe {
            blosc_src::blosc_compress_ctx(
                5,
                shuffle,
                typesize,
                data.len(),
                data.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                out.len(),
                cname.as_ptr(),
                0,
                1,
            )
        };
        assert!(n > 0);
        out.truncate(n as usize);
        out
    }

    #[test]
    fn every_compressor_and_shuffle_round_trips() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"] {
            for shuffle in 0..=2 {
                let enc = compress(&data, cname, shuffle, 4);
                assert_eq!(decode(&enc, data.len()).unwrap(), data, "{cname} {shuffle}");
            }
        }
    }

    #[test]
    fn hostile_headers_are_refused_before_allocating() {
        let data = vec![1u8; 4096];
        let enc = compress(&data, "lz4", 1, 1);
        assert!(matches!(decode(&enc, 100), Err(CodecError::TooLarge { .. })));
        let mut bomb = enc.clone();
        bomb[4..8].copy_from_slice(&u32::MAX.to_le_bytes()); // claims 4 GiB
        assert!(decode(&bomb, 1 << 20).is_err());
        assert!(decode(&enc[..20], 4096).is_err());
        assert!(decode(b"short", 10).is_err());
        let mut garbage = enc;
        for b in garbage.iter_mut().skip(16) {
            *b = 0xAB;
        }
        assert!(decode(&garbage, 4096).is_err());
    }
}
