//! Any bytes as a shard: index parsing, partial and full decoding never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::codec::sharding::{InnerLocation, ShardingCodec};
use nzfs::zarr::data_type::{DataType, FillValue};
use nzfs::json;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, shard)) = data.split_first() else { return };
    let configs = [
        r#"{"chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}"#,
        r#"{"chunk_shape": [2, 4], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "big"}}], "index_location": "start"}"#,
        r#"{"chunk_shape": [4, 4], "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}"#,
    ];
    let config = json::parse(configs[selector as usize % configs.len()].as_bytes()).unwrap();
    let Ok(codec) = ShardingCodec::from_configuration(Some(&config), &[4, 8], DataType::UInt16, &FillValue(vec![0, 0]), 0)
    else {
        return;
    };
    let _ = codec.decode(shard.to_vec());
    let len = shard.len() as u64;
    let Ok((at, n)) = codec.index_range(len) else { return };
    let Ok(index) = codec.decode_index(shard[at as usize..(at + n) as usize].to_vec()) else { return };
    for inner in 0..codec.inner_count() {
        if let Ok(InnerLocation::At { offset, nbytes }) = codec.locate(&index, inner, Some(len)) {
            let _ = codec.decode_inner(Some(shard[offset as usize..(offset + nbytes) as usize].to_vec()));
        }
    }
    let mut out = vec![0u8; 64];
    let inner: Vec<Vec<u8>> = (0..codec.inner_count()).map(|_| vec![1u8; codec.inner_bytes()]).collect();
    let start = u64::from(selector) % 64;
    codec.copy_range(start, &mut out[..(64 - start as usize).min(64)], |i| &inner[i as usize]);
});
