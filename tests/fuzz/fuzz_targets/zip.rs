//! Any bytes as a zip file holding a Zarr store: opening it, listing every
//! folder, and reading every member whole, in ranges and by stamp errs or
//! answers, never panics, reads past the data or hands out more than asked
//! (the central directory, local headers and deflate streams are all the
//! input's to lie about).
#![no_main]
use libfuzzer_sys::fuzz_target;

use nzfs::store::zip::ZipStore;
use nzfs::store::{Listable, MemoryStore, ReadableStore, StoreKey};

/// The most a member is read whole here (the daemon's metadata limit is
/// larger; a small one keeps each run fast and still checks the bound).
const MAX_LEN: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut mem = MemoryStore::default();
    mem.insert("s.zip", data.to_vec());
    let Ok(zip) = ZipStore::open(Box::new(mem), StoreKey::new("s.zip").unwrap()) else {
        return;
    };
    let mut folders = vec![String::new()];
    let mut seen = 0;
    while let Some(prefix) = folders.pop() {
        let Ok(listing) = zip.list_dir(&prefix) else { continue };
        let join = |name: &str| match prefix.as_str() {
            "" => name.to_string(),
            p => format!("{p}/{name}"),
        };
        for name in &listing.prefixes {
            seen += 1;
            if seen < 4096 {
                folders.push(join(name));
            }
        }
        for name in &listing.keys {
            let Ok(key) = StoreKey::new(&join(name)) else { continue };
            let stamp = zip.stat(&key).ok().flatten();
            if let Ok(Some(value)) = zip.get(&key, MAX_LEN) {
                assert!(value.len() as u64 <= MAX_LEN, "{key}: {} bytes past the limit", value.len());
                if let Some(s) = stamp {
                    assert_eq!(value.len() as u64, s.len, "{key}: the value and its stamp disagree");
                }
            }
            if let Some(s) = stamp {
                for (offset, len) in [(0, s.len.min(64)), (s.len / 2, s.len - s.len / 2), (s.len, 1)] {
                    if let Ok(Some(part)) = zip.get_range(&key, offset, len, Some(s)) {
                        assert_eq!(part.len() as u64, len, "{key}: a range of the wrong length");
                    }
                }
            }
        }
    }
});
