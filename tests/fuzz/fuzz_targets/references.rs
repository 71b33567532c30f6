//! Any bytes as a kerchunk reference set (issue #35): opening it, listing
//! it, and reading every key whose target is the one data file errs or
//! answers, never panics, reads past the data or hands out more than asked.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::references::ReferenceStore;
use nzfs::store::{MemoryStore, ReadableStore, StoreKey};

fuzz_target!(|data: &[u8]| {
    let mut mem = MemoryStore::default();
    mem.insert("refs.json", data.to_vec());
    mem.insert("d", b"0123456789".to_vec());
    let key = StoreKey::new("refs.json").unwrap();
    let Ok(s) = ReferenceStore::open(Box::new(mem), key, std::path::Path::new("/nonexistent")) else { return };
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
            if let Ok(Some(st)) = s.stat(&key) {
                if let Ok(Some(v)) = s.get_range(&key, 0, st.len.min(16), Some(st)) {
                    assert_eq!(v.len() as u64, st.len.min(16));
                }
            }
        }
    }
});
