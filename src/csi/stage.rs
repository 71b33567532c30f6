//! Stage once, publish many: `NodeStageVolume` mounts a volume once per
//! node, at the staging path the kubelet gives, with the volume's
//! attributes and secrets checked as a publish checks them
//! ([`super::plan`]); `NodePublishVolume` with a staging path bind-mounts
//! that one mount, read-only, `nosuid` and `nodev`, at each pod's target;
//! `NodeUnpublishVolume` removes only that bind mount; `NodeUnstageVolume`
//! unmounts the daemon once no pod's target holds it. Pods on a node that
//! mount one volume so share its daemon, its decoded cache and its disk
//! cache; another volume (other attributes, other secrets) is another
//! staging path, another daemon.
//!
//! Invariants: a bind is made only of a live nzfs mount this plugin
//! staged (a record names it), and recorded with its staging path, so an
//! unpublish unmounts only that bind and never the daemon; an unstage
//! refuses while a recorded bind of its staging path is mounted; a staged
//! mount whose daemon died is reported to the publish that needs it
//! (`UNAVAILABLE`, which the kubelet retries), never bound as an empty
//! directory.

use std::path::Path;

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use tonic::{Code, Status};

use super::node::{Node, mounted_at};
use super::plan::{Plan, precondition};
use super::records::Record;

fn internal(what: &str, at: &Path, e: impl std::fmt::Display) -> Status {
    Status::internal(format!("{what} {}: {e}", at.display()))
}

impl Node {
    /// Bind the volume staged at `staging` to `plan`'s target, read-only.
    pub(super) fn bind(&self, staging: &Path, plan: &Plan) -> Result<(), Status> {
        let staged = self.records().get(staging).filter(|r| r.staging.is_none());
        match staged {
            Some(r) if r.volume_id == plan.volume_id => {}
            Some(r) => {
                return Err(precondition(format!(
                    "{} holds volume {:?}, not {:?}",
                    staging.display(),
                    r.volume_id,
                    plan.volume_id
                )));
            }
            None => {
                return Err(precondition(format!(
                    "volume {:?} is not staged at {} by this plugin: NodeStageVolume first",
                    plan.volume_id,
                    staging.display()
                )));
            }
        }
        let source = match mounted_at(staging) {
            Some((fstype, source)) if fstype == "fuse.nzfs" && !crate::daemon::is_stale(staging) => source,
            _ => {
                return Err(Status::unavailable(format!(
                    "the mount of volume {:?} at {} is gone (its daemon died?); the kubelet unstages and stages it again \
                 once no pod uses it, or unmount it (nzfs unmount --lazy) and retry",
                    plan.volume_id,
                    staging.display()
                )));
            }
        };
        if let Some((fstype, at)) = mounted_at(&plan.target) {
            if fstype == "fuse.nzfs" && at == source {
                tracing::info!(volume = %plan.volume_id, target = %plan.target.display(), "already published");
                if self.records().get(&plan.target).is_none() {
                    self.note(plan, false, Some(staging))?;
                }
                return Ok(());
            }
            return Err(Status::new(
                Code::AlreadyExists,
                format!("{} is already a mount of {at} ({fstype})", plan.target.display()),
            ));
        }
        let created = !plan.target.exists();
        std::fs::create_dir_all(&plan.target).map_err(|e| internal("cannot create", &plan.target, e))?;
        let undo = |why: Status| {
            let _ = rustix::mount::unmount(&plan.target, UnmountFlags::DETACH);
            if created {
                let _ = std::fs::remove_dir(&plan.target);
            }
            why
        };
        rustix::mount::mount_bind(staging, &plan.target).map_err(|e| undo(internal("cannot bind", &plan.target, e)))?;
        // A bind of its own: the pod's mounts propagate nowhere.
        let _ = rustix::mount::mount_change(&plan.target, MountPropagationFlags::PRIVATE);
        let flags = MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV;
        rustix::mount::mount_remount(&plan.target, flags, "")
            .map_err(|e| undo(internal("cannot make read-only", &plan.target, e)))?;
        self.note(plan, created, Some(staging)).map_err(undo)?;
        tracing::info!(
            volume = %plan.volume_id,
            target = %plan.target.display(),
            staging = %staging.display(),
            "published (a bind of the staged mount)"
        );
        Ok(())
    }

    /// Remove the bind of `record`'s target (its staged mount stays).
    pub(super) fn unbind(&self, record: &Record) -> Result<(), Status> {
        if let Err(e) = rustix::mount::unmount(&record.target, UnmountFlags::empty()) {
            tracing::warn!(target = %record.target.display(), "unmount: {e}; detaching it");
            rustix::mount::unmount(&record.target, UnmountFlags::DETACH)
                .map_err(|e| internal("cannot unmount", &record.target, e))?;
        }
        tracing::info!(volume = %record.volume_id, target = %record.target.display(), "unpublished (a bind)");
        Ok(())
    }

    /// `NodeUnstageVolume` of `volume_id` at `staging`: refused while a
    /// pod's target still holds a bind of it; else its daemon unmounted.
    pub(super) fn unstage(&self, volume_id: &str, staging: &Path) -> Result<(), Status> {
        let bound: Vec<String> = self
            .records()
            .all()
            .into_iter()
            .filter(|r| r.staging.as_deref() == Some(staging) && mounted_at(&r.target).is_some())
            .map(|r| r.target.display().to_string())
            .collect();
        if !bound.is_empty() {
            return Err(precondition(format!(
                "volume {volume_id:?} at {} is still published at {}: unpublish it there first",
                staging.display(),
                bound.join(", ")
            )));
        }
        self.unpublish(volume_id, staging)
    }
}
