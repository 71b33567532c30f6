//! Any bytes as a zarr.json: parsing and building the codec chain never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::codec::CodecChain;
use nzfs::zarr::metadata::NodeMetadata;

fuzz_target!(|data: &[u8]| {
    if let Ok(NodeMetadata::Array(a)) = NodeMetadata::parse(data) {
        let _ = CodecChain::new(&a.codecs, &a.chunk_shape, a.data_type, &a.fill_value);
    }
});
