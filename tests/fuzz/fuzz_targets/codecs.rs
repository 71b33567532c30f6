//! Any bytes through every codec's decoder, and through whole chains.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::codec::{BytesToBytes, CodecChain};
use nzfs::zarr::data_type::{DataType, FillValue};
use nzfs::json;
use nzfs::zarr::metadata::CodecSpec;

fn spec(name: &str, config: &str) -> CodecSpec {
    CodecSpec { name: name.into(), configuration: json::parse(config.as_bytes()).ok(), must_understand: true }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    use nzfs::codec::lzma::Lzma;
    use nzfs::codec::numcodecs::{Checksum, Compressor};
    // Raw lzma streams (numcodecs' format 3) through each kind of filter.
    for filters in [
        r#"[{"id": 33}]"#,
        r#"[{"id": 3, "dist": 4}, {"id": 33}]"#,
        r#"[{"id": 4}, {"id": 7}, {"id": 4611686018427387905, "lc": 1, "lp": 1, "pb": 1}]"#,
    ] {
        let config = json::parse(format!(r#"{{"format": 3, "filters": {filters}}}"#).as_bytes()).ok();
        if let Ok(raw) = Lzma::from_configuration(config.as_ref()) {
            let _ = raw.decode(rest, 1 << 16);
        }
    }
    for codec in [
        BytesToBytes::Zstd(nzfs::codec::zstd::Zstd::from_configuration(None)),
        BytesToBytes::Gzip(nzfs::codec::gzip::Gzip::from_configuration(None)),
        BytesToBytes::Blosc,
        BytesToBytes::Crc32c,
        BytesToBytes::Numcodecs(Compressor::Zlib),
        BytesToBytes::Numcodecs(Compressor::Bz2),
        BytesToBytes::Numcodecs(Compressor::Lz4),
        BytesToBytes::Numcodecs(Compressor::Lzma(Lzma::Container)),
        BytesToBytes::Checksum(Checksum::Fletcher32),
        BytesToBytes::Checksum(Checksum::JenkinsLookup3 { initval: 0, prefix: vec![] }),
    ] {
        let _ = codec.decode(rest.to_vec(), None, 1 << 16);
        let _ = codec.decode(rest.to_vec(), Some(256), 1 << 16);
    }
    let bytes = spec("bytes", r#"{"endian": "big"}"#);
    let chains = [
        vec![spec("transpose", r#"{"order": [2, 0, 1]}"#), bytes.clone(), spec("zstd", "{}")],
        vec![bytes.clone(), spec("gzip", "{}"), spec("crc32c", "{}")],
        vec![bytes.clone(), spec("blosc", r#"{"cname": "lz4", "shuffle": "shuffle", "typesize": 4}"#)],
        vec![bytes.clone()],
        vec![bytes.clone(), spec("numcodecs.delta", r#"{"dtype": ">f4", "astype": ">i2"}"#), spec("numcodecs.lz4", "{}")],
        vec![bytes.clone(), spec("numcodecs.packbits", "{}"), spec("numcodecs.zlib", "{}")],
        vec![bytes.clone(), spec("numcodecs.fixedscaleoffset", r#"{"dtype": "<f4", "astype": "|u1", "scale": 10}"#)],
        vec![spec("vlen-utf8", "{}"), spec("numcodecs.zstd", "{}")],
        // The formats of 2026.
        vec![spec("numcodecs.pcodec", "{}")],
        vec![spec("scale_offset", r#"{"offset": 5, "scale": 0.1}"#), spec("numcodecs.pcodec", "{}")],
        vec![
            spec("cast_value", r#"{"data_type": "int16", "out_of_range": "clamp", "scalar_map": {"decode": [[0, "NaN"]]}}"#),
            spec("bytes", r#"{"endian": "little"}"#),
            spec("zstd", "{}"),
        ],
        // zfp's C decoder on hostile streams (selector 11 mod 17; seed zfp-3d).
        vec![spec("numcodecs.zfpy", r#"{"mode": 4, "tolerance": 0.01}"#)],
        vec![spec("packbits", r#"{"first_bit": 3, "last_bit": 20, "padding_encoding": "first_byte"}"#)],
        // The registry's last codecs: headerless zfp (selector 13; seed
        // zfp-registry-rate), conditional masks, reshape, N5 block headers.
        vec![spec("zfp", r#"{"mode": "fixed_rate", "rate": 8}"#)],
        vec![
            bytes.clone(),
            spec(
                "conditional",
                r#"{"codecs": [{"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}, {"name": "zstd"}, {"name": "crc32c"}]}"#,
            ),
        ],
        vec![spec("reshape", r#"{"shape": [-1, 5]}"#), spec("transpose", r#"{"order": [1, 0]}"#), bytes.clone(), spec("gzip", "{}")],
        vec![spec(
            "n5_default",
            r#"{"codecs": [{"name": "transpose", "configuration": {"order": [2, 1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd"}]}"#,
        )],
    ];
    // Values of any length reordered whole (a Zarr v2 array of order "F").
    let strings = [spec("transpose", r#"{"order": [2, 1, 0]}"#), spec("vlen-bytes", "{}")];
    if let Ok(c) = CodecChain::new(&strings, &[3, 4, 5], DataType::Bytes, &FillValue(Vec::new())) {
        let _ = c.decode(rest.to_vec());
    }
    let chain = &chains[selector as usize % chains.len()];
    let dt = if chain[0].name == "vlen-utf8" { DataType::String } else { DataType::Float32 };
    if let Ok(c) = CodecChain::new(chain, &[3, 4, 5], dt, &FillValue(vec![0; 4])) {
        let _ = c.decode(rest.to_vec());
    }
});
