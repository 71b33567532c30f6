//! Any bytes as an OCDBT database: decoded as a manifest and as a B+tree
//! node, and opened as a store whose `manifest.ocdbt` is the input's first
//! bytes (as many as its length field says) and whose every data file is
//! the rest (the seeds: a manifest, then the leaf it names), then every
//! key listed and read: each errs or answers, never panics, allocates
//! past its bounds or reads past a value's range.
#![no_main]
use libfuzzer_sys::fuzz_target;

use nzfs::store::ocdbt::{OcdbtStore, format};
use nzfs::store::{Listable, Listing, ReadableStore, Stamp, StoreKey, StoreResult};

/// A store of one directory holding `manifest.ocdbt` (the first bytes),
/// where every other key is the rest.
struct Everywhere {
    manifest: Vec<u8>,
    rest: Vec<u8>,
}

impl Everywhere {
    fn of(&self, key: &StoreKey) -> &[u8] {
        match key.as_str() {
            "manifest.ocdbt" => &self.manifest,
            _ => &self.rest,
        }
    }
}

impl ReadableStore for Everywhere {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let v = self.of(key);
        Ok((v.len() as u64 <= max_len).then(|| v.to_vec()))
    }
    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, _e: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let v = self.of(key);
        let end = offset.checked_add(len).filter(|&e| e <= v.len() as u64);
        match end {
            Some(end) => Ok(Some(v[offset as usize..end as usize].to_vec())),
            None => Err(nzfs::store::StoreError::Corrupt("past the end".into())),
        }
    }
    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        Ok(Some(Stamp {
            len: self.of(key).len() as u64,
            version: 1,
        }))
    }
}

impl Listable for Everywhere {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        let mut l = Listing::default();
        if prefix.is_empty() {
            l.keys.push("manifest.ocdbt".into());
        }
        Ok(l)
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = format::manifest(data);
    let _ = format::node(data);
    let said = data.get(4..12).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    let cut = usize::try_from(said).unwrap_or(usize::MAX).min(data.len());
    let (manifest, rest) = data.split_at(cut);
    let store = Everywhere {
        manifest: manifest.to_vec(),
        rest: rest.to_vec(),
    };
    let Ok(store) = OcdbtStore::open(Box::new(store)) else {
        return;
    };
    let mut folders = vec![String::new()];
    while let Some(prefix) = folders.pop() {
        let Ok(listing) = store.list_dir(&prefix) else { continue };
        let join = |name: &str| match prefix.as_str() {
            "" => name.to_string(),
            p => format!("{p}/{name}"),
        };
        folders.extend(listing.prefixes.iter().map(|p| join(p)));
        for name in &listing.keys {
            let Ok(key) = StoreKey::new(join(name)) else { continue };
            let Ok(Some(s)) = store.stat(&key) else { continue };
            if let Ok(Some(v)) = store.get(&key, 1 << 20) {
                assert_eq!(v.len() as u64, s.len, "{key}: the value and its stamp disagree");
            }
            if let Ok(Some(part)) = store.get_range(&key, s.len / 2, s.len - s.len / 2, Some(s)) {
                assert_eq!(part.len() as u64, s.len - s.len / 2, "{key}: a range of the wrong length");
            }
        }
    }
});
