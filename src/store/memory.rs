//! An in-memory store, for tests: keys are strings, values byte vectors.
//! Every object has version 0 and no [`super::Access`]. Beside it, a
//! [`FaultyStore`] fails the reads of chosen objects of any store, with
//! any [`StoreError`], for tests of every error exit.

use crate::store::{StoreError, StoreResult};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Listing, ReadableStore, Stamp, StoreKey, check_stamp, short_value, too_large};

/// An in-memory store, for tests.
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    values: BTreeMap<String, Vec<u8>>,
}

impl MemoryStore {
    /// Put `value` at `key`.
    pub fn insert(&mut self, key: &str, value: impl Into<Vec<u8>>) {
        self.values.insert(key.to_string(), value.into());
    }

    /// Take the value at `key` away.
    pub fn remove(&mut self, key: &str) {
        self.values.remove(key);
    }
}

impl ReadableStore for MemoryStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        match self.values.get(key.as_str()) {
            Some(v) if v.len() as u64 > max_len => Err(too_large(v.len() as u64, max_len)),
            v => Ok(v.cloned()),
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let Some(v) = self.values.get(key.as_str()) else {
            return Ok(None);
        };
        check_stamp(
            key,
            Stamp {
                len: v.len() as u64,
                version: 0,
            },
            expect,
        )?;
        let end = offset.checked_add(len).filter(|&e| e <= v.len() as u64);
        match end {
            Some(end) => Ok(Some(v[offset as usize..end as usize].to_vec())),
            None => Err(short_value(key, offset, len, v.len() as u64)),
        }
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        Ok(self.values.get(key.as_str()).map(|v| Stamp {
            len: v.len() as u64,
            version: 0,
        }))
    }
}

impl crate::store::Listable for MemoryStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        Ok(super::sorted_listing(&self.values, prefix))
    }
}

/// A failure a [`FaultyStore`] gives: one per [`StoreError`] variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// [`StoreError::NotFound`]: a listed object gone.
    NotFound,
    /// [`StoreError::Denied`].
    Denied,
    /// [`StoreError::TimedOut`].
    TimedOut,
    /// [`StoreError::Changed`].
    Changed,
    /// [`StoreError::TooLarge`].
    TooLarge,
    /// [`StoreError::Corrupt`].
    Corrupt,
    /// [`StoreError::Io`].
    Io,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 7] = [
        Fault::NotFound,
        Fault::Denied,
        Fault::TimedOut,
        Fault::Changed,
        Fault::TooLarge,
        Fault::Corrupt,
        Fault::Io,
    ];

    /// The error it gives for `key`, naming it.
    pub fn error(self, key: &str) -> StoreError {
        let says = |what: &str| format!("{key}: {what} (a fault of the test)");
        match self {
            Fault::NotFound => StoreError::NotFound(says("gone")),
            Fault::Denied => StoreError::Denied(says("denied")),
            Fault::TimedOut => StoreError::TimedOut(says("timed out")),
            Fault::Changed => StoreError::Changed(says("changed")),
            Fault::TooLarge => StoreError::TooLarge {
                len: 1 << 40,
                max_len: 1,
            },
            Fault::Corrupt => StoreError::Corrupt(says("corrupt")),
            Fault::Io => StoreError::failed(says("failed")),
        }
    }
}

/// A store over another whose reads (`get`, ranges, `stat`) of chosen
/// keys fail with a chosen [`Fault`], until healed. Its clones share the
/// store and the faults: a test keeps one to fail and heal objects under
/// the one it handed on.
#[derive(Clone)]
pub struct FaultyStore {
    inner: Arc<dyn ReadableStore>,
    faults: Arc<Mutex<BTreeMap<String, Fault>>>,
}

impl FaultyStore {
    /// `inner`, with no fault yet.
    pub fn over(inner: Box<dyn ReadableStore>) -> Self {
        FaultyStore {
            inner: Arc::from(inner),
            faults: Arc::default(),
        }
    }

    /// Reads of `key` fail with `fault` from now on.
    pub fn fail(&self, key: &str, fault: Fault) {
        crate::sync::lock(&self.faults).insert(key.to_string(), fault);
    }

    /// Reads of `key` work again.
    pub fn heal(&self, key: &str) {
        crate::sync::lock(&self.faults).remove(key);
    }

    fn check(&self, key: &StoreKey) -> StoreResult<()> {
        match crate::sync::lock(&self.faults).get(key.as_str()) {
            Some(fault) => Err(fault.error(key.as_str())),
            None => Ok(()),
        }
    }
}

impl ReadableStore for FaultyStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        self.check(key)?;
        self.inner.get(key, max_len)
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        self.check(key)?;
        self.inner.get_range(key, offset, len, expect)
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        self.check(key)?;
        self.inner.stat(key)
    }

    fn wrapped(&self) -> Option<&dyn ReadableStore> {
        Some(self.inner.as_ref())
    }
}

impl crate::store::Listable for FaultyStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        self.inner.list_dir(prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::FilesystemStore;

    /// A decorator that implements only what it changes still answers
    /// every hint and fact of the store it wraps: the local filesystem's
    /// directory stamps, owners and modes, and profile reach through a
    /// FaultyStore, which writes none of them.
    #[test]
    fn a_decorator_forwards_what_it_does_not_change_by_construction() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/k"), b"v").unwrap();
        let plain = FilesystemStore::new(dir.path());
        let faulty = FaultyStore::over(Box::new(FilesystemStore::new(dir.path())));
        let key = StoreKey::new("a/k").unwrap();
        assert!(plain.dir_stamp("a").unwrap().is_some());
        assert_eq!(faulty.dir_stamp("a").unwrap(), plain.dir_stamp("a").unwrap());
        assert!(plain.access("a/k").unwrap().is_some());
        assert_eq!(faulty.access("a/k").unwrap(), plain.access("a/k").unwrap());
        assert_eq!(faulty.profile(), plain.profile());
        assert!(faulty.profile().rereads_are_cheap);
        faulty.will_need(&key);
        assert_eq!(faulty.get(&key, 8).unwrap().as_deref(), Some(&b"v"[..]));
        // A store of its own wraps none, and keeps the defaults.
        assert!(MemoryStore::default().wrapped().is_none());
        assert_eq!(MemoryStore::default().dir_stamp("a").unwrap(), None);
    }
}
