//! Any bytes as a zarr.json, or as a Zarr v2 .zarray (with the same bytes as
//! its .zattrs): parsing and building the codec chain never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::codec::CodecChain;
use nzfs::json;
use nzfs::zarr::metadata::NodeMetadata;

fuzz_target!(|data: &[u8]| {
    if let Ok(NodeMetadata::Array(a)) = NodeMetadata::parse(data) {
        let _ = CodecChain::new(&a.codecs, &a.chunk_shape, a.data_type, &a.fill_value);
    }
    if let Ok(doc) = json::parse(data) {
        if let Ok(a) = nzfs::zarr::v2::parse_array(&doc, Some(&doc)) {
            let _ = CodecChain::new(&a.codecs, &a.chunk_shape, a.data_type, &a.fill_value);
        }
        let _ = nzfs::zarr::v2::parse_group(&doc, Some(&doc));
    }
});
