//! An in-memory store, for tests: keys are strings, values byte vectors.
//! Every object has version 0 and no [`super::Access`].

use crate::store::StoreResult;
use std::collections::BTreeMap;

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

    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        Ok(super::sorted_listing(&self.values, prefix))
    }
}
