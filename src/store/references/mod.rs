//! kerchunk / VirtualiZarr reference sets as a store (a module
//! of its own, since it reads JSON and `store` imports no Zarr model): each
//! key is inline data, or a byte range (or the whole) of a target file, as
//! fsspec's reference spec writes them, in JSON (versions 0 and 1, with
//! `templates` and `gen`; `document`) or Parquet ([`parquet`]):
//!
//! ```text
//! {"version": 1, "templates": {"u": "data.nc"},
//!  "refs": {".zgroup": "{\"zarr_format\":2}", "t/0.0": ["{{u}}", 10808, 27],
//!           "t/1.0": ["base64:AAEC"], "x/0": ["s3://bucket/other.nc"]}}
//! ```
//!
//! Targets are read through [`targets::Targets`]: the reference file's own
//! directory, or prefixes the user allowed, local or in object storage.
//! Where a target is in object storage, small references that lie next to
//! each other in one target are read in one request, and the pieces the
//! reader did not ask for yet are kept for it (bounded by [`PIECES_BYTES`]).
//!
//! Invariants: the reference file is read once, bounded by
//! [`MAX_REFERENCE_BYTES`]; a key's bytes are exactly its range (a target
//! too short for it is an error naming the key and the target); a key whose
//! reference is bad (a malformed template, a refused target) is an error on
//! that key only, with the reason; a value's stamp is its length and the
//! reference file's version.

mod document;
mod merge;
mod pages;
pub mod parquet;
pub mod targets;
mod template;

use crate::store::{StoreError, StoreResult};
use crate::sync::lock;
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::json;
use crate::store::{Access, Listing, ReadableStore, Stamp, StoreKey};
pub use merge::PIECES_BYTES;
use merge::{Pieces, Spans, spans_of};
pub use targets::{Home, TargetOptions, Targets};

/// The largest reference file read, decompressed: it is parsed whole and
/// its references held in memory (a parsed document costs several times
/// its text), so sets larger than this belong in Parquet.
pub const MAX_REFERENCE_BYTES: u64 = 64 << 20;

/// What one key refers to, its target resolved.
#[derive(Debug, Clone)]
pub(crate) enum Ref {
    Inline(Arc<[u8]>),
    /// `len` bytes at `offset` of target `target`; `None` for the whole.
    Range {
        target: u32,
        span: Option<(u64, u64)>,
    },
    /// Why the key cannot be read.
    Bad(Arc<str>),
}

/// A resolved reference from its text form.
pub(crate) fn resolve(targets: &Targets, spec: document::Spec) -> Ref {
    match spec {
        document::Spec::Inline(data) => Ref::Inline(data.into()),
        document::Spec::Bad(why) => Ref::Bad(why.to_string().into()),
        // A range must end inside a file that can exist (below 2^63), so
        // that the end and the merge arithmetic on it cannot overflow.
        document::Spec::Url {
            span: Some((offset, len)),
            ..
        } if offset.checked_add(len).is_none_or(|end| end > i64::MAX as u64) => {
            Ref::Bad(format!("byte range {offset}+{len} ends past any file's size").into())
        }
        document::Spec::Url { url, span } => match targets.intern(&url) {
            Ok(target) => Ref::Range { target, span },
            Err(why) => Ref::Bad(why.to_string().into()),
        },
    }
}

/// Say at once, as a note for `nzfs mount` and in the log, how many
/// references of a JSON set point where nothing allows them, one of them,
/// and the option that would.
fn note_outside(targets: &Targets, name: &str, refs: &BTreeMap<String, Ref>) {
    let mut outside = 0usize;
    let mut example = None;
    for (key, r) in refs {
        if let Ref::Range { target, .. } = r {
            let t = targets.get(*target);
            if t.at.is_err() {
                outside += 1;
                example.get_or_insert_with(|| format!("{key} -> {}", t.url));
            }
        }
    }
    let Some(example) = example else { return };
    let options: Vec<String> = targets
        .refused()
        .iter()
        .map(|p| format!("--store-option virtual_chunks={p}"))
        .collect();
    let note = format!(
        "reference set {name}: {outside} of {} references point outside its directory (for example {example}) \
         and read as EIO; to read them, mount with {}",
        refs.len(),
        options.join(" ")
    );
    tracing::warn!("{note}");
    crate::store::notes::add(note);
}

enum Refs {
    Json {
        refs: BTreeMap<String, Ref>,
        spans: Arc<Spans>,
    },
    Parquet(parquet::ParquetRefs),
}

/// A kerchunk or VirtualiZarr reference set read as a store: each key is
/// inline bytes, or a range of a target file.
pub struct ReferenceStore {
    targets: Targets,
    /// The reference file's (or Parquet directory's) key in the home store.
    file: StoreKey,
    refs: Refs,
    version: u64,
    pieces: Mutex<Pieces>,
    fetched: std::sync::Condvar,
}

fn bad(file: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("reference set {file}: {reason}"))
}

/// The stamp and bytes of the file at `key` (at most `max_len` of them),
/// which must exist.
pub(crate) fn read_whole(store: &dyn ReadableStore, key: &StoreKey, max_len: u64) -> StoreResult<(Stamp, Vec<u8>)> {
    let missing = || StoreError::NotFound(format!("{key}: no such file"));
    let stamp = store.stat(key)?.ok_or_else(missing)?;
    Ok((stamp, store.get(key, max_len)?.ok_or_else(missing)?))
}

/// `raw` decompressed, bounded by [`MAX_REFERENCE_BYTES`].
fn decompressed(name: &str, raw: Vec<u8>) -> StoreResult<Vec<u8>> {
    let reader: Box<dyn io::Read + '_> = if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(&raw[..]))
    } else if name.ends_with(".zst") {
        Box::new(zstd::stream::read::Decoder::new(&raw[..])?)
    } else {
        return Ok(raw);
    };
    let mut out = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(reader, MAX_REFERENCE_BYTES + 1), &mut out)?;
    Ok(out)
}

impl ReferenceStore {
    fn with(targets: Targets, file: StoreKey, refs: Refs, version: u64) -> ReferenceStore {
        // (A JSON set's refused targets were told at open: note_outside. A
        // Parquet set's records are read on demand, and say so then.)
        ReferenceStore {
            targets,
            file,
            refs,
            version,
            pieces: Mutex::new(Pieces {
                lru: LruCache::unbounded(),
                bytes: 0,
                fetching: Default::default(),
            }),
            fetched: std::sync::Condvar::new(),
        }
    }

    /// Read the JSON reference set at `file` of the home store of `targets`
    /// (`.json`, or compressed `.json.gz`/`.json.zst`).
    pub fn open(targets: Targets, file: StoreKey) -> StoreResult<ReferenceStore> {
        let name = file.as_str().to_string();
        let (stamp, raw) = read_whole(targets.home(), &file, MAX_REFERENCE_BYTES)?;
        let raw = decompressed(&name, raw).map_err(|e| bad(&name, e))?;
        if raw.len() as u64 > MAX_REFERENCE_BYTES {
            return Err(bad(&name, format!("more than {MAX_REFERENCE_BYTES} bytes")));
        }
        let doc = json::parse(&raw).map_err(|e| bad(&name, e))?;
        drop(raw);
        let entries = document::entries(&doc).map_err(|e| bad(&name, e))?;
        drop(doc);
        let mut refs = BTreeMap::new();
        for (key, spec) in entries {
            let r = match StoreKey::new(key.clone()) {
                Ok(_) => resolve(&targets, spec),
                Err(e) => return Err(bad(&name, e)),
            };
            refs.insert(key, r);
        }
        let spans = Arc::new(spans_of(refs.values()));
        note_outside(&targets, &name, &refs);
        Ok(ReferenceStore::with(
            targets,
            file,
            Refs::Json { refs, spans },
            stamp.version,
        ))
    }

    /// Open the Parquet reference set in directory `dir` of the home store
    /// of `targets` (kerchunk's `refs_to_dataframe`: `.zmetadata` with
    /// `record_size`, and `VAR/refs.N.parq`), reading no record yet.
    pub fn open_parquet(targets: Targets, dir: StoreKey) -> StoreResult<ReferenceStore> {
        let (set, version) = parquet::ParquetRefs::open(targets.home(), &dir)?;
        Ok(ReferenceStore::with(targets, dir, Refs::Parquet(set), version))
    }

    /// The reference of `key`, and the spans of its neighbours.
    fn lookup(&self, key: &StoreKey) -> StoreResult<Option<(Ref, Arc<Spans>)>> {
        match &self.refs {
            Refs::Json { refs, spans } => Ok(refs.get(key.as_str()).map(|r| (r.clone(), Arc::clone(spans)))),
            Refs::Parquet(p) => p.lookup(key, &self.targets),
        }
    }

    fn failed(&self, key: &StoreKey, target: u32, e: StoreError) -> StoreError {
        e.context(format!("{key}: target {}", self.targets.get(target).url))
    }

    fn missing(&self, key: &StoreKey, target: u32) -> StoreError {
        StoreError::NotFound(format!(
            "{key}: target {}: no such object",
            self.targets.get(target).url
        ))
    }

    /// The store and key of `target`, or the reason it cannot be read.
    fn at(&self, key: &StoreKey, target: u32) -> StoreResult<(Arc<dyn ReadableStore>, StoreKey)> {
        let t = self.targets.get(target);
        t.at.clone().map_err(|why| StoreError::Corrupt(format!("{key}: {why}")))
    }

    /// The stamp of `key`'s value: its length (a whole target's asks the
    /// target) and the set's version.
    fn stamp_of(&self, key: &StoreKey, r: &Ref) -> StoreResult<Stamp> {
        let len = match r {
            Ref::Inline(data) => data.len() as u64,
            Ref::Range {
                span: Some((_, len)), ..
            } => *len,
            Ref::Range { target, span: None } => {
                let (store, tkey) = self.at(key, *target)?;
                store
                    .stat(&tkey)
                    .map_err(|e| self.failed(key, *target, e))?
                    .ok_or_else(|| self.missing(key, *target))?
                    .len
            }
            Ref::Bad(why) => return Err(StoreError::Corrupt(format!("{key}: {why}"))),
        };
        Ok(Stamp {
            len,
            version: self.version,
        })
    }
}

impl ReadableStore for ReferenceStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let Some((r, spans)) = self.lookup(key)? else {
            return Ok(None);
        };
        match r {
            Ref::Inline(data) if data.len() as u64 > max_len => {
                Err(crate::store::too_large(data.len() as u64, max_len))
            }
            Ref::Inline(data) => Ok(Some(data.to_vec())),
            Ref::Bad(why) => Err(StoreError::Corrupt(format!("{key}: {why}"))),
            Ref::Range { target, span: None } => {
                let (store, tkey) = self.at(key, target)?;
                let got = store.get(&tkey, max_len).map_err(|e| self.failed(key, target, e))?;
                Ok(Some(got.ok_or_else(|| self.missing(key, target))?))
            }
            Ref::Range {
                target,
                span: Some((offset, len)),
            } => {
                if len > max_len {
                    return Err(crate::store::too_large(len, max_len));
                }
                self.read_span(key, target, offset, len, &spans).map(Some)
            }
        }
    }

    /// One lookup: the key's reference, its bounds checked against its
    /// stamp, then the range read.
    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let Some((r, _)) = self.lookup(key)? else {
            return Ok(None);
        };
        let stamp = self.stamp_of(key, &r)?;
        crate::store::check_stamp(key, stamp, expect)?;
        if offset.checked_add(len).is_none_or(|end| end > stamp.len) {
            return Err(crate::store::short_value(key, offset, len, stamp.len));
        }
        match r {
            Ref::Inline(data) => Ok(Some(data[offset as usize..(offset + len) as usize].to_vec())),
            Ref::Range { target, span } => {
                let (store, tkey) = self.at(key, target)?;
                let base = span.map_or(0, |(o, _)| o);
                Ok(Some(
                    store
                        .get_range(&tkey, base + offset, len, None)
                        .map_err(|e| self.failed(key, target, e))?
                        .ok_or_else(|| self.missing(key, target))?,
                ))
            }
            Ref::Bad(why) => Err(StoreError::Corrupt(format!("{key}: {why}"))),
        }
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        match self.lookup(key)? {
            None => Ok(None),
            Some((r, _)) => self.stamp_of(key, &r).map(Some),
        }
    }

    /// The home's, unless targets may be remote; a set is followed whole,
    /// never object by object.
    fn profile(&self) -> super::Profile {
        let home = self.targets.home().profile();
        let remote = self.targets.may_be_remote();
        super::Profile {
            concurrency: if remote { 16 } else { home.concurrency },
            rereads_are_cheap: !remote && home.rereads_are_cheap,
            rewritten_in_place: false,
        }
    }

    /// A directory: the reference file's access, searchable by whoever
    /// may read it. A key: the meet of the reference file's access and,
    /// for a key that reads a target, of the target's and of every
    /// directory on the way to it, so that a set cannot show a user bytes
    /// the user could not read directly.
    fn access(&self, path: &str) -> StoreResult<Option<Access>> {
        let file = self.targets.home().access(self.file.as_str())?;
        let found = match StoreKey::new(path) {
            Ok(key) => self.lookup(&key)?,
            Err(_) => None,
        };
        let target = match found {
            None => return Ok(file.map(Access::searchable)),
            Some((Ref::Range { target, .. }, _)) => target,
            Some(_) => return Ok(file),
        };
        let t = self.targets.get(target);
        let sources = t
            .sources()
            .map_err(|why| StoreError::Denied(format!("{path}: {why}")))?;
        let Some(base) = file.or_else(|| sources.first().map(|s| s.0)) else {
            return Ok(None);
        };
        let mut meet = crate::store::Meet::new(base.uid, base.gid);
        if let Some(f) = &file {
            meet.require(f, crate::store::Need::Read);
        }
        for (a, need) in sources {
            meet.require(a, *need);
        }
        Ok(Some(meet.access()))
    }
}

impl crate::store::Listable for ReferenceStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        Ok(match &self.refs {
            Refs::Json { refs, .. } => crate::store::sorted_listing(refs, prefix),
            Refs::Parquet(p) => crate::store::sorted_listing(p.metadata(), prefix),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Listable;
    use crate::store::MemoryStore;

    fn store(doc: &str, files: &[(&str, &[u8])]) -> StoreResult<ReferenceStore> {
        let mut mem = MemoryStore::default();
        mem.insert("refs.json", doc.as_bytes().to_vec());
        for (k, v) in files {
            mem.insert(k, v.to_vec());
        }
        let home = Home::Local("/nonexistent-dir".into());
        ReferenceStore::open(
            Targets::new(Arc::new(mem), home, TargetOptions::home_only()),
            StoreKey::new("refs.json").unwrap(),
        )
    }

    #[test]
    fn version_0_and_1_references_read_their_bytes() {
        let s = store(
            r#"{"version": 1, "templates": {"u": "data.bin"},
                "refs": {".zgroup": "{\"zarr_format\":2}", "a/0": ["{{u}}", 2, 3], "a/1": ["base64:AAEC"],
                         "a/2": ["data.bin"], "b/c/d": "x"}}"#,
            &[("data.bin", b"0123456789")],
        )
        .unwrap();
        let k = |s: &str| StoreKey::new(s).unwrap();
        assert_eq!(s.get(&k(".zgroup"), 100).unwrap().unwrap(), br#"{"zarr_format":2}"#);
        assert_eq!(s.get(&k("a/0"), 100).unwrap().unwrap(), b"234");
        assert_eq!(s.get(&k("a/1"), 100).unwrap().unwrap(), [0, 1, 2]);
        assert_eq!(s.get(&k("a/2"), 100).unwrap().unwrap(), b"0123456789");
        assert_eq!(s.get_range(&k("a/0"), 1, 2, None).unwrap().unwrap(), b"34");
        assert!(s.get_range(&k("a/0"), 2, 2, None).is_err());
        assert_eq!(s.stat(&k("a/2")).unwrap().unwrap().len, 10);
        assert!(s.get(&k("nope"), 100).unwrap().is_none());
        let root = s.list_dir("").unwrap();
        assert_eq!(root.keys, [".zgroup"]);
        assert_eq!(root.prefixes, ["a", "b"]);
        assert_eq!(s.list_dir("a").unwrap().keys, ["0", "1", "2"]);
        assert_eq!(s.list_dir("b").unwrap().prefixes, ["c"]);
        // Version 0: the references themselves.
        let s = store(r#"{"x/.zarray": "{}", "x/0": ["d", 0, 1]}"#, &[("d", b"z")]).unwrap();
        assert_eq!(s.get(&k("x/0"), 10).unwrap().unwrap(), b"z");
    }

    /// `.json.gz` and `.json.zst` are read decompressed; a key shows the
    /// meet of the reference file's mode and its target's, a directory the
    /// file's with search bits.
    #[test]
    fn compressed_sets_read_and_keys_show_the_files_access() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let doc = br#"{"version": 1, "refs": {"a/0": ["d", 1, 2], "b": "x"}}"#;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d"), b"0123").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.path().join("d"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(doc).unwrap();
        std::fs::write(dir.path().join("r.json.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(dir.path().join("r.json.zst"), zstd::encode_all(&doc[..], 3).unwrap()).unwrap();
        for name in ["r.json.gz", "r.json.zst"] {
            let file = dir.path().join(name);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            let inner = crate::store::FilesystemStore::new(dir.path());
            let targets = Targets::new(
                Arc::new(inner),
                Home::Local(dir.path().into()),
                TargetOptions::home_only(),
            );
            let s = ReferenceStore::open(targets, StoreKey::new(name).unwrap()).unwrap();
            let k = |s: &str| StoreKey::new(s).unwrap();
            assert_eq!(s.get(&k("a/0"), 10).unwrap().unwrap(), b"12", "{name}");
            assert_eq!(s.get(&k("b"), 10).unwrap().unwrap(), b"x", "{name}");
            // a/0 reads d (0644): the meet of 0640 and 0644; b is inline.
            assert_eq!(s.access("a/0").unwrap().unwrap().mode & 0o777, 0o440, "{name}");
            assert_eq!(s.access("b").unwrap().unwrap().mode & 0o777, 0o640, "{name}");
            assert_eq!(s.access("a").unwrap().unwrap().mode & 0o777, 0o750, "{name}");
        }
    }

    /// Targets outside the home are refused on their own key, with the
    /// option that would allow them; the rest of the set reads. A bad
    /// structure refuses the set.
    #[test]
    fn targets_outside_are_refused_on_their_key_only() {
        let s = store(
            r#"{"ok": ["d", 0, 1], "a": ["/etc/passwd", 0, 10], "b": ["file:///etc/passwd"],
                "c": ["s3://bucket/x.nc", 0, 10], "d": ["../up.nc", 0, 10], "e": ["d", 1], "f": 5,
                "g": ["ftp://h/x", 0, 1], "h": ["d", 0, 10]}"#,
            &[("d", b"x")],
        )
        .unwrap();
        let k = |s: &str| StoreKey::new(s).unwrap();
        assert_eq!(s.get(&k("ok"), 10).unwrap().unwrap(), b"x");
        for (key, hint) in [
            ("a", "virtual_chunks=file:///etc/"),
            ("b", "virtual_chunks=file:///etc/"),
            ("c", "virtual_chunks=s3://bucket/"),
            ("d", ".."),
            ("e", "[url, offset, length]"),
            ("f", "not a reference"),
            ("g", "not a path or a URL"),
            ("h", "past the end"),
        ] {
            let e = s.get(&k(key), 100).unwrap_err().to_string();
            assert!(e.contains(hint) && e.contains(key), "{key}: {e}");
        }
        for doc in [
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k", "url": "u"}]}"#,
            r#"{"version": 2, "refs": {}}"#,
            r#"[1]"#,
            r#"{"a/../b": "x"}"#,
        ] {
            assert!(store(doc, &[]).is_err(), "{doc}");
        }
    }

    /// A local directory allowed with `virtual_chunks=` is read; its
    /// neighbour is not.
    #[test]
    fn allowed_local_prefixes_are_read() {
        let data = tempfile::tempdir().unwrap();
        std::fs::create_dir(data.path().join("in")).unwrap();
        std::fs::write(data.path().join("in/t.nc"), b"0123456789").unwrap();
        std::fs::write(data.path().join("out.nc"), b"secret").unwrap();
        let dir = data.path().join("in").canonicalize().unwrap();
        let doc = format!(
            r#"{{"a": ["{0}/t.nc", 2, 3], "b": ["file://{0}/t.nc"], "c": ["{0}/../out.nc"], "d": ["{1}/out.nc"]}}"#,
            dir.display(),
            data.path().canonicalize().unwrap().display()
        );
        let mut mem = MemoryStore::default();
        mem.insert("refs.json", doc.into_bytes());
        let options = TargetOptions {
            allowed: vec![format!("file://{}/", dir.display())],
            ..TargetOptions::home_only()
        };
        let targets = Targets::new(Arc::new(mem), Home::Local("/nonexistent".into()), options);
        let s = ReferenceStore::open(targets, StoreKey::new("refs.json").unwrap()).unwrap();
        let k = |s: &str| StoreKey::new(s).unwrap();
        assert_eq!(s.get(&k("a"), 10).unwrap().unwrap(), b"234");
        assert_eq!(s.get(&k("b"), 10).unwrap().unwrap(), b"0123456789");
        assert!(s.get(&k("c"), 10).is_err());
        assert!(s.get(&k("d"), 10).unwrap_err().to_string().contains("virtual_chunks"));
    }

    /// A range that ends past 2^63 (the fuzzer's `18446744073709551615`)
    /// is an error on its key, and reading its neighbour, which would
    /// merge it, still reads (it once overflowed in the merge).
    #[test]
    fn ranges_past_any_file_are_bad_on_their_key() {
        let s = store(
            r#"{"x/0": ["d", 18446744073709551615, 1], "x/1": ["d", 9223372036854775807, 1], "x/2": ["d", 0, 1]}"#,
            &[("d", b"z")],
        )
        .unwrap();
        let k = |s: &str| StoreKey::new(s).unwrap();
        for key in ["x/0", "x/1"] {
            let e = s.get(&k(key), 10).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("past any file"), "{e}");
            assert!(s.stat(&k(key)).is_err());
        }
        assert_eq!(s.get(&k("x/2"), 10).unwrap().unwrap(), b"z");
    }

    /// A store that counts its requests, and is not cheap to read again
    /// (as object storage is not).
    struct Counting(MemoryStore, std::sync::atomic::AtomicUsize);

    impl ReadableStore for Counting {
        fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.get(key, max_len)
        }
        fn get_range(&self, key: &StoreKey, o: u64, n: u64, e: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.get_range(key, o, n, e)
        }
        fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
            self.0.stat(key)
        }
    }

    impl crate::store::Listable for Counting {
        fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
            self.0.list_dir(prefix)
        }
    }

    /// Adjacent small references of one target are read in one request
    /// where rereads cost a request; a far one is not merged.
    #[test]
    fn adjacent_ranges_are_read_in_one_request() {
        let mut mem = MemoryStore::default();
        mem.insert(
            "refs.json",
            br#"{"a/0": ["t", 0, 4], "a/1": ["t", 4, 4], "a/2": ["t", 10, 2], "a/3": ["t", 100000, 2]}"#.to_vec(),
        );
        let mut t: Vec<u8> = (0..=255).cycle().take(100002).collect();
        t[4..8].copy_from_slice(b"WXYZ");
        mem.insert("t", t.clone());
        let counting = Arc::new(Counting(mem, Default::default()));
        let targets = Targets::new(
            counting.clone(),
            Home::Local("/nonexistent".into()),
            TargetOptions::home_only(),
        );
        let s = ReferenceStore::open(targets, StoreKey::new("refs.json").unwrap()).unwrap();
        let before = counting.1.load(std::sync::atomic::Ordering::Relaxed);
        let k = |s: &str| StoreKey::new(s).unwrap();
        for (key, want) in [("a/0", &t[0..4]), ("a/1", b"WXYZ"), ("a/2", &t[10..12])] {
            assert_eq!(s.get(&k(key), 10).unwrap().unwrap(), want, "{key}");
        }
        assert_eq!(counting.1.load(std::sync::atomic::Ordering::Relaxed) - before, 1);
        assert_eq!(s.get(&k("a/3"), 10).unwrap().unwrap(), &t[100000..]);
        assert_eq!(counting.1.load(std::sync::atomic::Ordering::Relaxed) - before, 2);
        // Read again, a merged piece is read again (it was handed over).
        assert_eq!(s.get(&k("a/1"), 10).unwrap().unwrap(), b"WXYZ");
    }
}
