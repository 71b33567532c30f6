//! Any bytes as a kerchunk reference set: as JSON, or (when they
//! start with `PAR1`) as the record file of a Parquet set of a 10-chunk
//! array. Opening it, listing it, and reading every key (and every chunk of
//! the Parquet set) whose target is the one data file errs or answers,
//! never panics, reads past the data or hands out more than asked.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use nzfs::store::references::{Home, ReferenceStore, TargetOptions, Targets};
use nzfs::store::{Listable, MemoryStore, ReadableStore, StoreKey};

fuzz_target!(|data: &[u8]| {
    // The daemon reads Parquet under catch_unwind, so a panic inside the
    // reader is an error there (see references/parquet.rs); libfuzzer-sys's
    // hook would abort on it even when caught. The default hook only
    // prints: a panic that escapes still fails the run (libfuzzer-sys
    // aborts on it).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("caught? {info}"))));
    let mut mem = MemoryStore::default();
    let parquet = data.starts_with(b"PAR1");
    if parquet {
        mem.insert(
            "p/.zmetadata",
            br#"{"record_size": 4, "metadata": {".zgroup": {"zarr_format": 2},
                "x/.zarray": {"shape": [10], "chunks": [1], "dtype": "<u1", "compressor": null,
                              "fill_value": 0, "filters": null, "order": "C", "zarr_format": 2}}}"#
                .to_vec(),
        );
        mem.insert("p/x/refs.1.parq", data.to_vec());
    } else {
        mem.insert("refs.json", data.to_vec());
    }
    mem.insert("d", b"0123456789".to_vec());
    let targets = Targets::new(Arc::new(mem), Home::Local("/nonexistent".into()), TargetOptions::home_only());
    let opened = if parquet {
        ReferenceStore::open_parquet(targets, StoreKey::new("p").unwrap())
    } else {
        ReferenceStore::open(targets, StoreKey::new("refs.json").unwrap())
    };
    let Ok(s) = opened else { return };
    for i in 0..10 {
        let key = StoreKey::new(format!("x/{i}")).unwrap();
        if let Ok(Some(v)) = s.get(&key, 64) {
            assert!(v.len() <= 64);
        }
        let _ = s.stat(&key);
    }
    let mut stack = vec![String::new()];
    let mut seen = 0;
    while let Some(prefix) = stack.pop() {
        let Ok(listing) = s.list_dir(&prefix) else { continue };
        for p in listing.prefixes {
            seen += 1;
            if seen < 10_000 {
                stack.push(if prefix.is_empty() { p } else { format!("{prefix}/{p}") });
            }
        }
        for k in listing.keys {
            let full = if prefix.is_empty() { k } else { format!("{prefix}/{k}") };
            let Ok(key) = StoreKey::new(full) else { continue };
            if let Ok(Some(v)) = s.get(&key, 64) {
                assert!(v.len() <= 64);
            }
            // Who may read it: the meet with its target's (no modes here).
            let _ = s.access(key.as_str());
            if let Ok(Some(st)) = s.stat(&key) {
                if let Ok(Some(v)) = s.get_range(&key, 0, st.len.min(16), Some(st)) {
                    assert_eq!(v.len() as u64, st.len.min(16));
                }
            }
        }
    }
});
