//! The status document's schema: one Rust type per object of the JSON that
//! `nzfs status --json` prints (the mount root's answer to its status
//! ioctl). The daemon fills these types and `nzfs status` reads them back,
//! so each member is named once, here, as a field.
//!
//! Invariants: a member's JSON name is its field's name; members appear in
//! field order; reading is lenient (a member missing, of another type or
//! `null` where a value is expected reads as its default), so a newer
//! `nzfs status` reads an older daemon's document and the reverse.

use std::collections::BTreeMap;

use crate::json::Value;

/// A value of the status document: how it is written and read back.
pub trait Member: Sized + Default {
    /// The JSON of this value.
    fn to_json(&self) -> Value;
    /// This value read from `v`, or `None` when `v` is not one.
    fn from_json(v: &Value) -> Option<Self>;
}

impl Member for u64 {
    fn to_json(&self) -> Value {
        Value::UInt(*self)
    }
    fn from_json(v: &Value) -> Option<Self> {
        v.as_u64()
    }
}

impl Member for f64 {
    fn to_json(&self) -> Value {
        Value::Float(*self)
    }
    fn from_json(v: &Value) -> Option<Self> {
        v.as_f64()
    }
}

impl Member for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl Member for String {
    fn to_json(&self) -> Value {
        Value::Str(self.clone())
    }
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
}

/// `null` when absent.
impl<T: Member> Member for Option<T> {
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, Member::to_json)
    }
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_json(v).map(Some),
        }
    }
}

/// An array; elements that are not a `T` are skipped.
impl<T: Member> Member for Vec<T> {
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(Member::to_json).collect())
    }
    fn from_json(v: &Value) -> Option<Self> {
        Some(v.as_array()?.iter().filter_map(T::from_json).collect())
    }
}

/// An object of counts by name.
impl Member for BTreeMap<String, u64> {
    fn to_json(&self) -> Value {
        Value::Object(self.iter().map(|(k, n)| (k.clone(), Value::UInt(*n))).collect())
    }
    fn from_json(v: &Value) -> Option<Self> {
        Some(
            v.as_object()?
                .iter()
                .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                .collect(),
        )
    }
}

/// A struct whose fields are the members of a JSON object, each named by
/// its field (the only place it is spelled).
macro_rules! object {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl Member for $name {
            fn to_json(&self) -> Value {
                Value::Object(vec![$((stringify!($field).to_string(), self.$field.to_json()),)*])
            }
            fn from_json(v: &Value) -> Option<Self> {
                v.as_object()?;
                Some($name {
                    $($field: v.get(stringify!($field)).and_then(Member::from_json).unwrap_or_default(),)*
                })
            }
        }
    };
}

object! {
    /// The whole document.
    pub struct StatusDoc {
        /// nzfs's version.
        pub version: String,
        /// The daemon's process id.
        pub pid: u64,
        /// The store, as named at the mount (cut to a bounded length).
        pub store: String,
        /// Seconds since the mount.
        pub uptime_s: f64,
        /// The decoded-chunk cache.
        pub cache: Cache,
        /// Chunks decoded (the cache's `decodes` again).
        pub chunks_decoded: u64,
        /// `preview.png` files.
        pub previews: Previews,
        /// What reached the store; `null` when not counted.
        pub store_reads: Option<StoreReads>,
        /// The disk cache; `null` without one.
        pub disk_cache: Option<DiskCache>,
        /// Prefetch; `null` when off.
        pub prefetch: Option<Prefetch>,
        /// The CPUs the mount sized its pools for.
        pub cpus: Cpus,
        /// Errors readers were given.
        pub errors: Errors,
        /// FUSE passthrough (the adapter's).
        pub passthrough: Passthrough,
        /// Open requests (the adapter's).
        pub opens: Opens,
        /// Name lookups and listings (the adapter's).
        pub names: Names,
        /// Whether and how the mount follows its store's metadata.
        pub metadata: Metadata,
        /// What a writable mount stages and has committed (`None`: a
        /// read-only mount).
        pub writes: Option<Writes>,
    }
}

object! {
    /// A writable mount's writes.
    pub struct Writes {
        /// Files and edited files staged in the spool now.
        pub staged: u64,
        /// The bytes they hold.
        pub staged_bytes: u64,
        /// The spool's limit.
        pub limit_bytes: u64,
        /// Commits made through the mount.
        pub commits_made: u64,
        /// Commits that failed (the writer's close() failed).
        pub commits_failed: u64,
        /// The last commits made through the mount, newest first.
        pub commits: Vec<CommitMade>,
        /// The last commits that failed, newest first, with why.
        pub failures: Vec<CommitFailed>,
        /// Files the spool keeps that no handle holds (failed commits'
        /// bytes, an earlier daemon's leftovers), counted against the limit
        /// until they are removed.
        pub kept: Vec<KeptFile>,
        /// The spool paths of the files being written now.
        pub staged_paths: Vec<String>,
        /// What is held for `nzfs commit` (`--commit explicit`): the
        /// directory changes (`rmdir PATH`, `mkdir PATH`), then new files
        /// and arrays' files written into, by their paths in the mount;
        /// empty on a mount that commits each at its close.
        pub held: Vec<String>,
    }
}

object! {
    /// One commit that failed.
    pub struct CommitFailed {
        /// Seconds since the epoch.
        pub time: u64,
        /// Its message: what was written, by which program and user.
        pub message: String,
        /// Why it failed.
        pub reason: String,
    }
}

object! {
    /// A file the spool keeps.
    pub struct KeptFile {
        /// Its path in the spool.
        pub path: String,
        /// Its size.
        pub bytes: u64,
        /// Why it is there.
        pub why: String,
    }
}

object! {
    /// One commit made through the mount.
    pub struct CommitMade {
        /// Seconds since the epoch.
        pub time: u64,
        /// The new snapshot's id.
        pub snapshot: String,
        /// Its message: what was written, by which program and user.
        pub message: String,
    }
}

object! {
    /// The decoded-chunk cache.
    pub struct Cache {
        /// The most bytes it may hold.
        pub budget_bytes: u64,
        /// Bytes it holds.
        pub used_bytes: u64,
        /// Lookups answered from the cache.
        pub hits: u64,
        /// Lookups that waited on another reader's decode.
        pub waits: u64,
        /// Lookups that decoded the chunk.
        pub decodes: u64,
        /// (hits + waits) / lookups; `null` before the first lookup.
        pub hit_rate: Option<f64>,
        /// Chunks let go after a whole sequential read (the page cache
        /// holds them).
        pub released_whole_reads: u64,
    }
}

object! {
    /// `preview.png` files.
    pub struct Previews {
        /// Whether the mount shows them.
        pub shown: bool,
        /// How many were rendered (each also counts once in the cache's
        /// decodes).
        pub rendered: u64,
    }
}

object! {
    /// What reached the store (a disk cache's answers left out).
    pub struct StoreReads {
        /// Requests.
        pub requests: u64,
        /// Bytes read.
        pub bytes: u64,
        /// Lookups of an object (its existence and size).
        pub lookups: u64,
        /// Requests that failed.
        pub failures: u64,
        /// Requests in flight now.
        pub in_flight: u64,
        /// The most requests in flight at once.
        pub concurrency: u64,
    }
}

object! {
    /// The disk cache.
    pub struct DiskCache {
        /// Reads it answered.
        pub hits: u64,
        /// Bytes it answered.
        pub hit_bytes: u64,
        /// Reads it passed to the store.
        pub misses: u64,
        /// Lookups it answered without the store.
        pub stat_hits: u64,
        /// `null` until first measured.
        pub used_bytes: Option<u64>,
        /// The most bytes it may hold.
        pub budget_bytes: u64,
    }
}

object! {
    /// Prefetch.
    pub struct Prefetch {
        /// Its worker threads.
        pub workers: u64,
        /// Chunks queued.
        pub queued: u64,
        /// Chunks decoded ahead.
        pub done: u64,
    }
}

object! {
    /// The CPUs the mount sized its pools for.
    pub struct Cpus {
        /// How many.
        pub count: u64,
        /// Why that many.
        pub why: String,
        /// Threads answering FUSE requests.
        pub fuse_threads: u64,
        /// Threads decoding chunks.
        pub decoders: u64,
    }
}

object! {
    /// Errors readers were given (expected misses aside).
    pub struct Errors {
        /// All of them.
        pub total: u64,
        /// How many of each kind.
        pub by_kind: BTreeMap<String, u64>,
        /// The last few, newest first.
        pub recent: Vec<RecentError>,
    }
}

object! {
    /// One recent error.
    pub struct RecentError {
        /// Seconds since the epoch.
        pub time: u64,
        /// Its kind.
        pub kind: String,
        /// Names a store key; withheld from others than root and the
        /// mount's owner.
        pub message: String,
    }
}

object! {
    /// FUSE passthrough.
    pub struct Passthrough {
        /// Whether it is on.
        pub on: bool,
        /// Backing files registered.
        pub backings: u64,
        /// Bytes those files hold.
        pub backing_bytes: u64,
    }
}

object! {
    /// Open requests.
    pub struct Opens {
        /// Whether the kernel opens files itself after the first.
        pub by_kernel: bool,
        /// Requests.
        pub requests: u64,
    }
}

object! {
    /// Name lookups and listings.
    pub struct Names {
        /// Whether listings carry attributes.
        pub readdirplus: bool,
        /// Name lookups.
        pub lookups: u64,
        /// Entries listed with their attributes.
        pub listed_with_attributes: u64,
    }
}

object! {
    /// Whether and how the mount follows its store's metadata.
    pub struct Metadata {
        /// Whether the mount follows it.
        pub followed: bool,
        /// Seconds between looks while the mount is used.
        pub interval_s: u64,
        /// Changes seen since the mount.
        pub version: u64,
        /// Looks taken.
        pub looks: u64,
        /// Seconds since the epoch.
        pub last_checked: Option<u64>,
        /// When a look last found a change, in seconds since the epoch.
        pub last_changed: Option<u64>,
        /// Whether the last look could not read the store again (the log
        /// says why: the reason may name store keys).
        pub failed: bool,
        /// Older versions kept for the files readers opened before a
        /// change and still hold open.
        pub retired: u64,
    }
}

impl StatusDoc {
    /// The document as JSON text.
    pub fn to_text(&self) -> String {
        self.to_json().to_string()
    }

    /// The document read from JSON text.
    pub fn parse(text: &[u8]) -> Result<StatusDoc, StatusError> {
        let v = crate::json::parse(text)?;
        StatusDoc::from_json(&v).ok_or(StatusError::NotAnObject(v.kind()))
    }
}

/// Why a status document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// Not JSON.
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    /// JSON, but not an object (its kind).
    #[error("a JSON {0}, not an object")]
    NotAnObject(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_as_written() {
        let mut doc = StatusDoc {
            version: "0.1.0".into(),
            pid: 7,
            uptime_s: 1.5,
            store_reads: Some(StoreReads {
                requests: 3,
                ..Default::default()
            }),
            disk_cache: Some(DiskCache {
                used_bytes: None,
                hits: 2,
                ..Default::default()
            }),
            ..Default::default()
        };
        doc.errors.by_kind.insert("decode".into(), 2);
        doc.errors.recent.push(RecentError {
            time: 9,
            kind: "decode".into(),
            message: "k: bad".into(),
        });
        doc.metadata.last_checked = Some(100);
        let text = doc.to_text();
        assert_eq!(StatusDoc::parse(text.as_bytes()).unwrap(), doc, "{text}");
        assert!(
            text.contains(r#""prefetch":null"#) && text.contains(r#""used_bytes":null"#),
            "{text}"
        );
    }

    #[test]
    fn reading_is_lenient_and_refuses_what_is_not_an_object() {
        let doc = StatusDoc::parse(br#"{"pid":"x","cache":{"hits":4},"errors":{"recent":[1,{"kind":"io"}]}}"#).unwrap();
        assert_eq!(doc.pid, 0);
        assert_eq!(doc.cache.hits, 4);
        assert_eq!(
            doc.errors.recent,
            vec![RecentError {
                kind: "io".into(),
                ..Default::default()
            }]
        );
        assert!(StatusDoc::parse(b"[]").unwrap_err().to_string().contains("array"));
    }
}
