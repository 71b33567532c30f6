//! kerchunk / VirtualiZarr JSON reference sets as a store (issue #35; a
//! module of its own, since it reads JSON and `store` imports no Zarr
//! model): each
//! key is inline data, or a byte range (or the whole) of a target file, as
//! fsspec's reference spec (versions 0 and 1) writes them:
//!
//! ```text
//! {"version": 1, "templates": {"u": "data.nc"},
//!  "refs": {".zgroup": "{\"zarr_format\":2}", "t/0.0": ["{{u}}", 10808, 27],
//!           "t/1.0": ["base64:AAEC"], "x/0": ["other.nc"]}}
//! ```
//!
//! Targets are read through the store of the reference file's own
//! directory (`inner`): a relative path, or an absolute path or `file://`
//! URL inside that directory. That keeps the store's confinement and
//! symlink rules: a reference set cannot serve `/etc/shadow` to other users
//! of an `allow_other` mount. Targets elsewhere, remote targets (`s3://`,
//! `https://`, ...) and `gen` entries are refused at open, with the reason.
//!
//! Invariants: the reference file is read once, bounded by
//! [`MAX_REFERENCE_BYTES`]; a key's bytes are exactly its range (a target
//! too short for it is an error naming the key); a value's stamp is its
//! length and the reference file's version.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use base64::Engine;

use crate::store::{Access, Listing, ReadableStore, Stamp, StoreKey};
use crate::zarr::json::{self, Value};

/// The largest reference file read, decompressed: it is parsed whole and
/// its references held in memory (a parsed document costs several times
/// its text), so sets larger than this belong in Parquet (not read yet).
pub const MAX_REFERENCE_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone)]
enum Ref {
    Inline(Vec<u8>),
    /// `len` bytes at `offset` of target key `target`; `None` for the whole.
    Range {
        target: StoreKey,
        span: Option<(u64, u64)>,
    },
}

pub struct ReferenceStore {
    inner: Box<dyn ReadableStore>,
    /// The reference file's key in `inner`.
    file: StoreKey,
    refs: BTreeMap<String, Ref>,
    version: u64,
}

fn bad(file: &str, reason: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("reference set {file}: {reason}"))
}

impl ReferenceStore {
    /// Read the reference set at `file` of `inner` (its directory's store;
    /// `dir` is that directory, for absolute targets).
    pub fn open(inner: Box<dyn ReadableStore>, file: StoreKey, dir: &Path) -> io::Result<ReferenceStore> {
        let name = file.as_str().to_string();
        let stamp = inner
            .stat(&file)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: no such file")))?;
        let mut raw = inner
            .get(&file, MAX_REFERENCE_BYTES)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: no such file")))?;
        if name.ends_with(".gz") {
            let mut out = Vec::new();
            io::Read::read_to_end(
                &mut io::Read::take(flate2::read::MultiGzDecoder::new(&raw[..]), MAX_REFERENCE_BYTES + 1),
                &mut out,
            )?;
            raw = out;
        } else if name.ends_with(".zst") {
            let mut out = Vec::new();
            io::Read::read_to_end(
                &mut io::Read::take(zstd::stream::read::Decoder::new(&raw[..])?, MAX_REFERENCE_BYTES + 1),
                &mut out,
            )?;
            raw = out;
        }
        if raw.len() as u64 > MAX_REFERENCE_BYTES {
            return Err(bad(&name, format!("more than {MAX_REFERENCE_BYTES} bytes")));
        }
        let doc = json::parse(&raw).map_err(|e| bad(&name, e))?;
        let (refs, templates) = match doc.get("version") {
            None => (&doc, Vec::new()),
            Some(v) if v.as_u64() == Some(1) => {
                if doc.get("gen").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
                    return Err(bad(
                        &name,
                        "`gen` entries are not read yet (expand them with kerchunk first)",
                    ));
                }
                let templates = match doc.get("templates") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Object(t)) => t
                        .iter()
                        .map(|(k, v)| {
                            Ok((
                                k.clone(),
                                v.as_str()
                                    .ok_or_else(|| bad(&name, "a template is not a string"))?
                                    .to_string(),
                            ))
                        })
                        .collect::<io::Result<Vec<_>>>()?,
                    Some(_) => return Err(bad(&name, "`templates` is not an object")),
                };
                (
                    doc.get("refs").ok_or_else(|| bad(&name, "version 1 without `refs`"))?,
                    templates,
                )
            }
            Some(v) => return Err(bad(&name, format!("version {v} (nzfs reads 0 and 1)"))),
        };
        let Value::Object(entries) = refs else {
            return Err(bad(&name, "the references are not an object"));
        };
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut out = BTreeMap::new();
        for (key, value) in entries {
            StoreKey::new(key.clone()).map_err(|e| bad(&name, e))?;
            let r = match value {
                Value::Str(s) => Ref::Inline(inline(s).map_err(|e| bad(&name, format!("{key}: {e}")))?),
                Value::Array(items) => {
                    let url = items
                        .first()
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad(&name, format!("{key}: a reference must start with a URL")))?;
                    let url = substitute(url, &templates);
                    if items.len() == 1 && url.starts_with("base64:") {
                        Ref::Inline(inline(&url).map_err(|e| bad(&name, format!("{key}: {e}")))?)
                    } else {
                        let target = target_key(&url, &dir).map_err(|e| bad(&name, format!("{key}: {e}")))?;
                        let span = match items.len() {
                            1 => None,
                            3 => {
                                let n = |i: usize| {
                                    items[i]
                                        .as_u64()
                                        .ok_or_else(|| bad(&name, format!("{key}: offset and length must be integers")))
                                };
                                Some((n(1)?, n(2)?))
                            }
                            _ => return Err(bad(&name, format!("{key}: [url], or [url, offset, length]"))),
                        };
                        Ref::Range { target, span }
                    }
                }
                other => return Err(bad(&name, format!("{key}: a {} is not a reference", other.kind()))),
            };
            out.insert(key.clone(), r);
        }
        Ok(ReferenceStore {
            inner,
            file,
            refs: out,
            version: stamp.version,
        })
    }

    fn entry(&self, key: &StoreKey) -> Option<&Ref> {
        self.refs.get(key.as_str())
    }
}

/// An inline value: `base64:` data decoded, other text as its UTF-8 bytes.
fn inline(s: &str) -> Result<Vec<u8>, String> {
    match s.strip_prefix("base64:") {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("bad base64: {e}")),
        None => Ok(s.as_bytes().to_vec()),
    }
}

/// `{{name}}` replaced by each template's text.
fn substitute(url: &str, templates: &[(String, String)]) -> String {
    let mut out = url.to_string();
    for (k, v) in templates {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    out
}

/// The key in the reference file's directory of target `url`.
fn target_key(url: &str, dir: &Path) -> Result<StoreKey, String> {
    let path = match url.split_once("://") {
        Some(("file", rest)) => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "target {url}: {scheme}:// targets are not read yet; nzfs reads targets in the reference file's directory"
            ));
        }
        None => url,
    };
    let rel = match Path::new(path).strip_prefix(dir) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) if Path::new(path).is_absolute() => {
            return Err(format!(
                "target {url} is outside the reference file's directory {} (refused: a reference set must not \
                 serve other files the daemon can read)",
                dir.display()
            ));
        }
        Err(_) => path.trim_start_matches("./").to_string(),
    };
    StoreKey::new(rel).map_err(|e| format!("target {url}: {e}"))
}

impl ReadableStore for ReferenceStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> io::Result<Option<Vec<u8>>> {
        match self.entry(key) {
            None => Ok(None),
            Some(Ref::Inline(data)) if data.len() as u64 > max_len => Err(io::Error::other(format!(
                "{key}: {} bytes, more than {max_len}",
                data.len()
            ))),
            Some(Ref::Inline(data)) => Ok(Some(data.clone())),
            Some(Ref::Range { target, span: None }) => Ok(Some(
                self.inner.get(target, max_len)?.ok_or_else(|| missing(key, target))?,
            )),
            Some(Ref::Range {
                target,
                span: Some((offset, len)),
            }) => {
                if *len > max_len {
                    return Err(io::Error::other(format!("{key}: {len} bytes, more than {max_len}")));
                }
                Ok(Some(
                    self.inner
                        .get_range(target, *offset, *len, None)?
                        .ok_or_else(|| missing(key, target))?,
                ))
            }
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> io::Result<Option<Vec<u8>>> {
        let Some(stamp) = self.stat(key)? else { return Ok(None) };
        crate::store::check_stamp(key, stamp, expect)?;
        if offset.checked_add(len).is_none_or(|end| end > stamp.len) {
            return Err(io::Error::other(format!("{key}: range past its {} bytes", stamp.len)));
        }
        match self.entry(key) {
            Some(Ref::Inline(data)) => Ok(Some(data[offset as usize..(offset + len) as usize].to_vec())),
            Some(Ref::Range { target, span }) => {
                let base = span.map_or(0, |(o, _)| o);
                Ok(Some(
                    self.inner
                        .get_range(target, base + offset, len, None)?
                        .ok_or_else(|| missing(key, target))?,
                ))
            }
            None => Ok(None),
        }
    }

    fn stat(&self, key: &StoreKey) -> io::Result<Option<Stamp>> {
        let len = match self.entry(key) {
            None => return Ok(None),
            Some(Ref::Inline(data)) => data.len() as u64,
            Some(Ref::Range {
                span: Some((_, len)), ..
            }) => *len,
            Some(Ref::Range { target, span: None }) => {
                self.inner.stat(target)?.ok_or_else(|| missing(key, target))?.len
            }
        };
        Ok(Some(Stamp {
            len,
            version: self.version,
        }))
    }

    fn list_dir(&self, prefix: &str) -> io::Result<Listing> {
        Ok(crate::store::sorted_listing(&self.refs, prefix))
    }

    fn rereads_are_cheap(&self) -> bool {
        self.inner.rereads_are_cheap()
    }

    /// Every path as the reference file itself (a directory also searchable
    /// by whoever may read it).
    fn access(&self, path: &str) -> io::Result<Option<Access>> {
        let file = self.inner.access(self.file.as_str())?;
        Ok(file.map(|a| {
            if self.refs.contains_key(path) {
                a
            } else {
                a.searchable()
            }
        }))
    }
}

fn missing(key: &StoreKey, target: &StoreKey) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{key}: its target {target} is missing"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn store(doc: &str, files: &[(&str, &[u8])]) -> io::Result<ReferenceStore> {
        let mut mem = MemoryStore::default();
        mem.insert("refs.json", doc.as_bytes().to_vec());
        for (k, v) in files {
            mem.insert(k, v.to_vec());
        }
        ReferenceStore::open(
            Box::new(mem),
            StoreKey::new("refs.json").unwrap(),
            Path::new("/nonexistent-dir"),
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

    /// `.json.gz` and `.json.zst` are read decompressed; every key shows
    /// the reference file's owner and mode, a directory with search bits.
    #[test]
    fn compressed_sets_read_and_keys_show_the_files_access() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let doc = br#"{"version": 1, "refs": {"a/0": ["d", 1, 2], "b": "x"}}"#;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d"), b"0123").unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(doc).unwrap();
        std::fs::write(dir.path().join("r.json.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(dir.path().join("r.json.zst"), zstd::encode_all(&doc[..], 3).unwrap()).unwrap();
        for name in ["r.json.gz", "r.json.zst"] {
            let file = dir.path().join(name);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            let inner = crate::store::FilesystemStore::new(dir.path());
            let s = ReferenceStore::open(Box::new(inner), StoreKey::new(name).unwrap(), dir.path()).unwrap();
            let k = |s: &str| StoreKey::new(s).unwrap();
            assert_eq!(s.get(&k("a/0"), 10).unwrap().unwrap(), b"12", "{name}");
            assert_eq!(s.get(&k("b"), 10).unwrap().unwrap(), b"x", "{name}");
            assert_eq!(s.access("a/0").unwrap().unwrap().mode & 0o777, 0o640, "{name}");
            assert_eq!(s.access("a").unwrap().unwrap().mode & 0o777, 0o750, "{name}");
        }
    }

    #[test]
    fn targets_outside_remote_or_generated_are_refused() {
        for doc in [
            r#"{"a": ["/etc/passwd", 0, 10]}"#,
            r#"{"a": ["file:///etc/passwd"]}"#,
            r#"{"a": ["s3://bucket/x.nc", 0, 10]}"#,
            r#"{"a": ["../up.nc", 0, 10]}"#,
            r#"{"version": 1, "refs": {}, "gen": [{"key": "k", "url": "u"}]}"#,
            r#"{"version": 2, "refs": {}}"#,
            r#"{"a": ["d", 1]}"#,
            r#"{"a": 5}"#,
        ] {
            assert!(store(doc, &[("d", b"x")]).is_err(), "{doc}");
        }
        // A target too short for its range is an error when read.
        let s = store(r#"{"a": ["d", 0, 10]}"#, &[("d", b"x")]).unwrap();
        assert!(s.get(&StoreKey::new("a").unwrap(), 100).is_err());
    }
}
