//! Any bytes as the zarr.json of a root group's child array or group:
//! discovery and CDL rendering never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::store::MemoryStore;
use nzfs::zarr::hierarchy::Hierarchy;

fuzz_target!(|data: &[u8]| {
    let mut store = MemoryStore::default();
    store.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group", "attributes": {"conventions": "NZ-1.0"}}"#);
    store.insert("x/zarr.json", data.to_vec());
    store.insert("as_root/zarr.json", data.to_vec());
    if let Ok(h) = Hierarchy::open(&store) {
        for id in 0..h.nodes.len() {
            let _ = nzfs::cdl::render(&h, id, "fuzz");
        }
    }
    let mut root = MemoryStore::default();
    root.insert("zarr.json", data.to_vec());
    if let Ok(h) = Hierarchy::open(&root) {
        let _ = nzfs::cdl::render(&h, 0, "fuzz");
    }
});
