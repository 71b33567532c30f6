//! New files held for one commit (`--commit explicit`): every `NAME.nc`
//! closed since the last `nzfs commit` stays in the spool, shown where it
//! was written, until [`Spool::commit_held`] makes them one commit, or
//! its writer removes it.
//!
//! Invariants: a held file leaves the spool only once its commit landed;
//! a commit that fails puts every file back as it was, and the branch
//! stays where it was (one commit, all or nothing); a file still open for
//! writing is never committed.

use super::{Spool, SpoolError, lock};
use crate::write::names::group_of;
use crate::write::{WriteError, node_path};

impl Spool {
    /// Hold new files for [`Spool::commit_held`] instead of committing
    /// each at its close (and at its `fsync`).
    pub fn hold_until_commit(&mut self) {
        self.explicit = true;
    }

    /// Whether new files are held for [`Spool::commit_held`].
    pub fn holds(&self) -> bool {
        self.explicit
    }

    /// The hierarchy paths of the held files (`group/NAME.nc`), in order:
    /// closed, named `NAME.nc`, written since their last commit.
    pub fn held(&self) -> Vec<String> {
        let files = lock(&self.files);
        let mut held: Vec<String> = files
            .values()
            .filter(|s| s.dirty && group_of(&s.name).is_some() && s.write_opens == 0)
            .map(|s| node_path(&s.parent, &s.name))
            .collect();
        held.sort();
        held
    }

    /// One commit, with `message`, of every held file, each as the group
    /// its close would have made: the snapshot and the paths committed;
    /// `None` where nothing is held. Refused, committing nothing, while a
    /// `NAME.nc` is open for writing (it may not be whole).
    pub fn commit_held(&self, message: &str) -> Result<Option<(String, Vec<String>)>, SpoolError> {
        let taken = {
            let mut files = lock(&self.files);
            let open: Vec<String> = files
                .values()
                .filter(|s| group_of(&s.name).is_some() && s.write_opens > 0)
                .map(|s| node_path(&s.parent, &s.name))
                .collect();
            if !open.is_empty() {
                return Err(SpoolError::Commit(WriteError::Conflict(format!(
                    "{} still open for writing: close it, then commit",
                    open.join(", ")
                ))));
            }
            let inos: Vec<u64> = files
                .iter()
                .filter(|(_, s)| s.dirty && group_of(&s.name).is_some())
                .map(|(&ino, _)| ino)
                .collect();
            inos.into_iter()
                .filter_map(|ino| files.remove(&ino).map(|s| (ino, s)))
                .collect::<Vec<_>>()
        };
        if taken.is_empty() {
            return Ok(None);
        }
        let paths: Vec<String> = taken.iter().map(|(_, s)| node_path(&s.parent, &s.name)).collect();
        let result = self.target.change(message, &mut |stage| {
            for (_, s) in &taken {
                let stem = group_of(&s.name).unwrap_or(&s.name);
                crate::write::stage_group(stage, &node_path(&s.parent, stem), &s.file)?;
            }
            Ok(())
        });
        self.record(message, result.as_ref().map(|l| l.snapshot.as_str()));
        match result {
            Ok(landed) => {
                for (_, s) in &taken {
                    let _ = std::fs::remove_file(&s.path);
                }
                Ok(Some((landed.snapshot, paths)))
            }
            Err(e) => {
                let mut files = lock(&self.files);
                for (ino, s) in taken {
                    files.insert(ino, s);
                }
                Err(SpoolError::Commit(e))
            }
        }
    }
}
