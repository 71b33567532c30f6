//! Commits to a branch: the only writes nzfs makes to any store.
//!
//! A [`Commit`] is a writable session on a branch's tip: objects are set in
//! it, in memory and in the repository's own chunk objects, and nothing is
//! visible to any reader until [`Commit::commit`] moves the branch. A commit
//! dropped before that leaves the branch as it was (the chunk objects it
//! wrote are unreferenced, for Icechunk's garbage collection).
//!
//! Invariants: every request runs on the process's runtime with the
//! repository's deadline; a branch moved by someone else meanwhile is
//! rebased onto when the two touched different objects (Icechunk's
//! conflict detector), and a real conflict is an error that names it,
//! with the branch left as the other writer made it.

use std::sync::Arc;

use bytes::Bytes;
use icechunk::conflicts::detector::ConflictDetector;

use super::{Repo, Reported, line};
use crate::store::documents::ZARR_JSON;
use crate::store::{StoreError, StoreResult};

/// How many times a commit is rebased onto a branch that moved.
const REBASE_ATTEMPTS: u16 = 5;

/// A commit being made on a branch.
pub struct Commit<'r> {
    repo: &'r Repo,
    store: icechunk::Store,
    branch: String,
    /// Refuse to rebase: the commit fails ([`StoreError::Changed`]) when
    /// the branch moved since it began, so that what it read at the tip
    /// still holds when it lands.
    strict: bool,
}

/// Node `path`'s `zarr.json` (`""`: the root's).
fn node_key(path: &str) -> String {
    match path {
        "" => ZARR_JSON.to_string(),
        p => format!("{p}/zarr.json"),
    }
}

fn reported(e: impl std::fmt::Display) -> Reported {
    Reported {
        text: line(e),
        not_found: false,
    }
}

impl Repo {
    /// Begin a commit on the tip of `branch`.
    pub fn begin(&self, branch: &str) -> StoreResult<Commit<'_>> {
        let store = self.run(&format!("a writable session on branch {branch}"), async {
            let session = self.repo.writable_session(branch).await.map_err(reported)?;
            let session = Arc::new(tokio::sync::RwLock::new(session));
            Ok(icechunk::Store::from_session(session).await)
        })?;
        Ok(Commit {
            repo: self,
            store,
            branch: branch.to_string(),
            strict: false,
        })
    }
}

impl Commit<'_> {
    /// This commit lands only on the tip it began on: a branch that moved
    /// meanwhile fails it ([`StoreError::Changed`]) instead of a rebase.
    /// For a change whose decisions (a group is empty, a group holds what
    /// an earlier commit made) were read at that tip: a rebase keeps them
    /// only where Icechunk's conflict detector sees the clash, and a new
    /// node in a group this commit deletes is not one it sees.
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// The id of the snapshot the commit began on: with [`Commit::strict`],
    /// the parent of the snapshot it makes.
    pub fn parent(&self) -> StoreResult<String> {
        self.repo.run("the session's snapshot", async {
            Ok(self.store.session().read().await.snapshot_id().to_string())
        })
    }

    /// The names of the nodes directly below node `path` at the tip the
    /// commit began on (with what was set since), at most `max`: an
    /// array's chunk prefix is left out. Empty when `path` is no node.
    pub fn children(&self, path: &str, max: usize) -> StoreResult<Vec<String>> {
        let doc = match self.get(&node_key(path), 1 << 24)? {
            Some(doc) => doc,
            None => return Ok(Vec::new()),
        };
        let is_array = crate::json::parse(&doc)
            .ok()
            .is_some_and(|v| v.get("node_type").and_then(|t| t.as_str()) == Some("array"));
        if is_array {
            // An array has no nodes below it (Icechunk refuses them).
            return Ok(Vec::new());
        }
        self.repo.run(&format!("list the nodes below {path}"), async {
            use futures::TryStreamExt;
            let stream = self.store.list_dir_items(path).await.map_err(reported)?;
            let mut names = Vec::new();
            futures::pin_mut!(stream);
            while let Some(item) = stream.try_next().await.map_err(reported)? {
                if let icechunk::store::ListDirItem::Prefix(p) = item {
                    names.push(p);
                    if names.len() >= max {
                        break;
                    }
                }
            }
            Ok(names)
        })
    }

    /// Whether `key` is there, at the tip the commit began on.
    pub fn exists(&self, key: &str) -> StoreResult<bool> {
        self.repo.run(&format!("is {key} there"), async {
            self.store.exists(key).await.map_err(reported)
        })
    }

    /// The bytes of `key` at the tip the commit began on (with what was
    /// set since), `None` when it is not there; more than `max_len` bytes
    /// is refused before they are fetched.
    pub fn get(&self, key: &str, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let got = self.repo.run(&format!("read {key}"), async {
            let size = match self.store.getsize(key).await {
                Ok(0) if !self.store.exists(key).await.unwrap_or(false) => return Ok(None),
                Ok(n) => n,
                Err(e) if super::not_found(&e) => return Ok(None),
                Err(e) => return Err(reported(e)),
            };
            if size > max_len {
                return Ok(Some(Err(size)));
            }
            match self.store.get(key, &icechunk::format::ByteRange::ALL).await {
                Ok(b) => Ok(Some(Ok(b.to_vec()))),
                Err(e) if super::not_found(&e) => Ok(None),
                Err(e) => Err(reported(e)),
            }
        })?;
        match got {
            Some(Err(len)) => Err(crate::store::too_large(len, max_len)),
            Some(Ok(b)) => Ok(Some(b)),
            None => Ok(None),
        }
    }

    /// Delete node `path` and everything below it (`""`: the root's
    /// children and the root).
    pub fn delete_node(&self, path: &str) -> StoreResult<()> {
        self.repo.run(&format!("delete {path}"), async {
            self.store.delete_dir(path).await.map_err(reported)
        })
    }

    /// Set `key` to `bytes`.
    pub fn put(&self, key: &str, bytes: Vec<u8>) -> StoreResult<()> {
        self.repo.run(&format!("write {key}"), async {
            self.store.set(key, Bytes::from(bytes)).await.map_err(reported)
        })
    }

    /// Commit what was set, with `message`; the new snapshot's id.
    pub fn commit(self, message: &str) -> StoreResult<String> {
        use icechunk::session::SessionErrorKind as K;
        let branch = self.branch.clone();
        let what = format!("commit to branch {branch}");
        let result = self.repo.run(&what, async {
            let session = self.store.session();
            let mut session = session.write().await;
            let builder = session.commit(message);
            let builder = match self.strict {
                true => builder,
                false => builder.rebase(&ConflictDetector, REBASE_ATTEMPTS),
            };
            Ok(builder.execute().await)
        })?;
        match result {
            Ok(id) => Ok(id.to_string()),
            // Someone else's commit touched what this one did.
            Err(e) if matches!(e.kind, K::RebaseFailed { .. } | K::Conflict { .. }) => {
                let conflicts = match &e.kind {
                    K::RebaseFailed { conflicts, .. } => format!(": {conflicts:?}"),
                    _ => String::new(),
                };
                Err(StoreError::Changed(format!(
                    "{}: {what}: the branch moved and a commit there conflicts with this one{conflicts}",
                    self.repo.display()
                )))
            }
            Err(e) => Err(StoreError::Corrupt(format!(
                "{}: {what}: {}",
                self.repo.display(),
                line(e)
            ))),
        }
    }
}
