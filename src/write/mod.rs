//! Write-back: what a program writes into a writable mount becomes Zarr
//! in an Icechunk commit.
//!
//! - [`classic`] reads a netCDF classic file (CDF-1, CDF-2, CDF-5) as its
//!   writer left it;
//! - [`group`] turns it into a Zarr v3 group, object by object;
//! - [`netcdf_group`] makes that group one commit on a branch;
//! - [`spool`] stages what a program writes into a writable mount until it
//!   closes the file, and [`Branch`] commits it there;
//! - [`edit`] turns bytes written into an existing array's `data.bin` or
//!   chunk files into its chunks, re-encoded by [`encode`];
//! - [`Stage`] is what a commit reads, sets and deletes at the branch's
//!   tip ([`spool::Target::change`]): a new group (`mkdir`), a removed
//!   node (`rmdir`), edited chunks.
//!
//! Invariants: nothing is written to a repository but through one commit
//! on a branch ([`crate::store::icechunk::Commit`]); a file that cannot be
//! converted leaves the branch as it was (it is checked whole before the
//! first object is set, and an error before the commit drops the session).

pub mod classic;
pub mod edit;
pub mod encode;
pub mod group;
pub mod spool;

/// `name` under the hierarchy path `parent` (`""`: the root), as a node's
/// path or a store key.
pub fn node_path(parent: &str, name: &str) -> String {
    match parent {
        "" => name.to_string(),
        p => format!("{p}/{name}"),
    }
}

/// Why a written file did not become a commit.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file cannot become a group.
    #[error(transparent)]
    Convert(#[from] group::ConvertError),
    /// A node of that name is there already.
    #[error("{0} is there already in the branch")]
    Exists(String),
    /// The repository refused or failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The branch changed what this commit changes since the version the
    /// mount showed the writer.
    #[error("{0}")]
    Conflict(String),
    /// What was written cannot be stored as it is (a chunk the array's
    /// codecs do not encode, a node that is not there).
    #[error("{0}")]
    Refused(String),
}

/// The objects of the branch's tip a commit reads and changes.
pub trait Stage {
    /// The bytes of `key`, `None` when it is not there; more than
    /// `max_len` is refused.
    fn get(&self, key: &str, max_len: u64) -> Result<Option<Vec<u8>>, WriteError>;
    /// Set `key`.
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), WriteError>;
    /// Delete node `path` and all below it.
    fn delete_node(&self, path: &str) -> Result<(), WriteError>;
}

#[cfg(feature = "icechunk")]
impl Stage for crate::store::icechunk::Commit<'_> {
    fn get(&self, key: &str, max_len: u64) -> Result<Option<Vec<u8>>, WriteError> {
        Ok(crate::store::icechunk::Commit::get(self, key, max_len)?)
    }
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), WriteError> {
        Ok(crate::store::icechunk::Commit::put(self, key, bytes)?)
    }
    fn delete_node(&self, path: &str) -> Result<(), WriteError> {
        Ok(crate::store::icechunk::Commit::delete_node(self, path)?)
    }
}

/// The netCDF classic file `file` as the new group `path` of `branch` of
/// `repo`, in one commit with `message`: the snapshot's id and what was
/// written.
#[cfg(feature = "icechunk")]
pub fn netcdf_group(
    repo: &crate::store::icechunk::Repo,
    branch: &str,
    path: &str,
    file: &std::fs::File,
    message: &str,
) -> Result<(String, group::Written), WriteError> {
    write_group(repo, branch, path, file, message, false)
}

/// [`netcdf_group`], or with `replace` the group `path` an earlier commit
/// of the same file made (a writer's `fsync`) replaced by it.
#[cfg(feature = "icechunk")]
fn write_group(
    repo: &crate::store::icechunk::Repo,
    branch: &str,
    path: &str,
    file: &std::fs::File,
    message: &str,
    replace: bool,
) -> Result<(String, group::Written), WriteError> {
    let parsed = classic::Classic::parse(file).map_err(group::ConvertError::from)?;
    let commit = repo.begin(branch)?;
    match replace {
        true => commit.delete_node(path)?,
        false if commit.exists(&node_path(path, "zarr.json"))? => return Err(WriteError::Exists(path.to_string())),
        false => {}
    }
    let written = group::convert(&parsed, file, path, &mut |key, bytes| {
        commit.put(&key, bytes).map_err(|e| e.to_string())
    })?;
    let id = commit.commit(message)?;
    Ok((id, written))
}

/// A branch of a repository, where a writable mount's closed files go: a
/// file `NAME.nc` written in a group's directory becomes the group `NAME`
/// beside it.
#[cfg(feature = "icechunk")]
pub struct Branch {
    /// The repository.
    pub repo: crate::store::icechunk::Repo,
    /// The branch's name.
    pub branch: String,
}

#[cfg(feature = "icechunk")]
impl spool::Target for Branch {
    fn commit(
        &self,
        (parent, name): (&str, &str),
        file: &std::fs::File,
        message: &str,
        replace: bool,
    ) -> Result<String, WriteError> {
        let stem = name.strip_suffix(".nc").unwrap_or(name);
        write_group(
            &self.repo,
            &self.branch,
            &node_path(parent, stem),
            file,
            message,
            replace,
        )
        .map(|(id, _)| id)
    }

    fn change(
        &self,
        message: &str,
        change: &mut dyn FnMut(&dyn Stage) -> Result<(), WriteError>,
    ) -> Result<String, WriteError> {
        let commit = self.repo.begin(&self.branch)?;
        change(&commit)?;
        Ok(commit.commit(message)?)
    }
}
