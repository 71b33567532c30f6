//! Write-back: what a program writes into a writable mount becomes Zarr
//! in an Icechunk commit.
//!
//! - [`group`] turns a netCDF file, classic (CDF-1, CDF-2, CDF-5) as
//!   [`crate::netcdf::classic`] reads it or netCDF-4 as
//!   [`crate::netcdf::nc4`] does, into Zarr v3 groups, object by object;
//! - [`netcdf_group`] makes that group one commit on a branch;
//! - [`spool`] stages what a program writes into a writable mount until it
//!   closes the file, and [`Branch`] commits it there;
//! - [`edit`] turns bytes written into an existing array's `data.bin` or
//!   chunk files into its chunks, re-encoded through the codec chain;
//! - [`names`] says which names a commit takes, for files and nodes;
//! - [`Stage`] is what a commit reads, sets and deletes at the branch's
//!   tip ([`spool::Target::change`]): a new group (`mkdir`), a removed
//!   node (`rmdir`), edited chunks.
//!
//! Invariants: nothing is written to a repository but through one commit
//! on a branch ([`crate::store::icechunk::Commit`]); a file that cannot be
//! converted leaves the branch as it was (it is checked whole before the
//! first object is set, and an error before the commit drops the session).

pub mod edit;
pub mod group;
pub mod names;
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
    /// A node to remove has nodes below it at the branch's tip (another
    /// writer's, committed since the mount last looked).
    #[error("{0} is not empty at the branch's tip: it holds {1}")]
    NotEmpty(String, String),
}

/// A change's commit that landed: the snapshot it made, and the one it
/// was made on (the branch's tip when it began: nothing came between, as
/// a change's commit is never rebased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    /// The new snapshot's id.
    pub snapshot: String,
    /// Its parent's id.
    pub parent: String,
}

/// The objects of the branch's tip a commit reads and changes.
pub trait Stage {
    /// The bytes of `key`, `None` when it is not there; more than
    /// `max_len` is refused.
    fn get(&self, key: &str, max_len: u64) -> Result<Option<Vec<u8>>, WriteError>;
    /// Set `key`.
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), WriteError>;
    /// Whether `key` is there (nothing of it read).
    fn exists(&self, key: &str) -> Result<bool, WriteError>;
    /// Delete node `path` and all below it.
    fn delete_node(&self, path: &str) -> Result<(), WriteError>;
    /// The names of the nodes directly below group `path`, at most `max`
    /// (none for an array, or where there is no node).
    fn children(&self, path: &str, max: usize) -> Result<Vec<String>, WriteError>;
}

/// How many times a change whose decisions were read at the tip is made
/// again on a branch that moved before it landed.
pub const TIP_ATTEMPTS: usize = 8;

#[cfg(feature = "icechunk")]
impl Stage for crate::store::icechunk::Commit<'_> {
    fn get(&self, key: &str, max_len: u64) -> Result<Option<Vec<u8>>, WriteError> {
        Ok(crate::store::icechunk::Commit::get(self, key, max_len)?)
    }
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), WriteError> {
        Ok(crate::store::icechunk::Commit::put(self, key, bytes)?)
    }
    fn exists(&self, key: &str) -> Result<bool, WriteError> {
        Ok(crate::store::icechunk::Commit::exists(self, key)?)
    }
    fn delete_node(&self, path: &str) -> Result<(), WriteError> {
        Ok(crate::store::icechunk::Commit::delete_node(self, path)?)
    }
    fn children(&self, path: &str, max: usize) -> Result<Vec<String>, WriteError> {
        Ok(crate::store::icechunk::Commit::children(self, path, max)?)
    }
}

/// `attempt` once on a strict commit begun at the tip of `branch`, and
/// again (up to [`TIP_ATTEMPTS`]) while the branch moves before it lands:
/// every decision `attempt` reads at the tip holds when its commit lands.
#[cfg(feature = "icechunk")]
fn at_tip<T>(
    repo: &crate::store::icechunk::Repo,
    branch: &str,
    attempt: &mut dyn FnMut(&crate::store::icechunk::Commit<'_>) -> Result<T, WriteError>,
    message: &str,
) -> Result<(Landed, T), WriteError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let commit = repo.begin(branch)?.strict();
        let parent = commit.parent()?;
        let made = attempt(&commit)?;
        match commit.commit(message) {
            Ok(snapshot) => return Ok((Landed { snapshot, parent }, made)),
            Err(crate::store::StoreError::Changed(_)) if tries < TIP_ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The netCDF file `file` (classic or netCDF-4) as the new group `path` of `branch` of
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
    write_group(repo, branch, path, file, message, None)
}

/// [`netcdf_group`], or with `replace` the group `path` an earlier commit
/// of the same file made (a writer's `fsync`), holding the arrays named
/// there, replaced by it. Anything else below `path` at the tip (another
/// writer's node, added since) is a conflict, and the branch stays as it
/// is: a replace only deletes what its own file made.
#[cfg(feature = "icechunk")]
fn write_group(
    repo: &crate::store::icechunk::Repo,
    branch: &str,
    path: &str,
    file: &std::fs::File,
    message: &str,
    replace: Option<&[String]>,
) -> Result<(String, group::Written), WriteError> {
    let opened = crate::netcdf::nc4::open(file).map_err(group::ConvertError::from)?;
    let Some(made) = replace else {
        // A new group: absent at the tip, and a node of the same name
        // committed meanwhile is a conflict Icechunk's rebase sees.
        let commit = repo.begin(branch)?;
        let written = stage_opened(&commit, path, &opened)?;
        return Ok((commit.commit(message)?, written));
    };
    at_tip(
        repo,
        branch,
        &mut |commit| {
            let there = commit.children(path, made.len() + 1)?;
            if let Some(other) = there.iter().find(|n| !made.contains(n)) {
                return Err(WriteError::Conflict(format!(
                    "{}: someone else added it to the group this file's earlier commit (its fsync) made; \
                     the group is left as the branch has it",
                    node_path(path, other)
                )));
            }
            commit.delete_node(path)?;
            put_groups(commit, path, &opened)
        },
        message,
    )
    .map(|(landed, written)| (landed.snapshot, written))
}

/// The netCDF file `file` (classic or netCDF-4) staged as the new group
/// `path` in `stage`: refused where a node of that path is at the tip.
pub fn stage_group(stage: &dyn Stage, path: &str, file: &std::fs::File) -> Result<group::Written, WriteError> {
    let opened = crate::netcdf::nc4::open(file).map_err(group::ConvertError::from)?;
    stage_opened(stage, path, &opened)
}

/// [`stage_group`] of a file opened already.
fn stage_opened(
    stage: &dyn Stage,
    path: &str,
    opened: &crate::netcdf::nc4::Opened,
) -> Result<group::Written, WriteError> {
    if stage.exists(&node_path(path, crate::zarr::documents::ZARR_JSON))? {
        return Err(WriteError::Exists(path.to_string()));
    }
    put_groups(stage, path, opened)
}

/// Every object of the groups of `opened`, as the group `path`, put in
/// `stage`.
fn put_groups(
    stage: &dyn Stage,
    path: &str,
    opened: &crate::netcdf::nc4::Opened,
) -> Result<group::Written, WriteError> {
    group::convert_all(opened, path, &mut |key, bytes| {
        stage.put(&key, bytes).map_err(|e| match e {
            WriteError::Store(s) => s,
            other => crate::store::StoreError::Io(std::io::Error::other(other.to_string())),
        })
    })
    .map_err(WriteError::from)
}

/// A branch of a repository, where a writable mount's closed files go: a
/// file `NAME.nc` written in a group's directory becomes the group `NAME`
/// beside it.
#[cfg(feature = "icechunk")]
pub struct Branch {
    /// The repository.
    pub repo: std::sync::Arc<crate::store::icechunk::Repo>,
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
        replace: Option<&[String]>,
    ) -> Result<(String, Vec<String>), WriteError> {
        let stem = names::group_of(name).unwrap_or(name);
        write_group(
            &self.repo,
            &self.branch,
            &node_path(parent, stem),
            file,
            message,
            replace,
        )
        .map(|(id, written)| (id, written.names))
    }

    fn change(
        &self,
        message: &str,
        change: &mut dyn FnMut(&dyn Stage) -> Result<(), WriteError>,
    ) -> Result<Landed, WriteError> {
        at_tip(&self.repo, &self.branch, &mut |commit| change(commit), message).map(|(landed, ())| landed)
    }
}
