//! The CSI Node service: NodeStageVolume makes the staging path an nzfs
//! mount of the volume's store, and NodePublishVolume a read-only bind of
//! it at each pod's target (`stage.rs`); a publish with no staging path
//! mounts the store at the target itself. NodeUnpublishVolume and
//! NodeUnstageVolume undo them. A request is first turned into a [`Plan`]
//! ([`super::plan`]), then carried out by running this binary's own `nzfs
//! mount` / `nzfs unmount` (or a bind mount), one call per path at a
//! time.
//!
//! Invariant: no store URL with user info or a query reaches an argv, a
//! log line or an error.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use tonic::{Code, Status};

use super::plan::{Plan, invalid, no_symlink_below, plan, precondition, target_of};
use super::proto::{self};
use super::records::{Record, Records};
use super::{CsiArgs, Reply};

/// The file system type and source of the mount at `target` (the last
/// one, if several are stacked).
pub fn mounted_at(target: &Path) -> Option<(String, String)> {
    crate::mounts::at(target).map(|m| (m.fstype, m.source))
}

#[derive(Clone)]
pub struct Node {
    args: CsiArgs,
    exe: PathBuf,
    /// The targets with a publish or unpublish in progress: one at a time
    /// per target, and a second call on a busy target is ABORTED at once
    /// (the CSI spec's "operation pending"), so a store that hangs holds
    /// up its own volume only.
    busy: Arc<Mutex<HashSet<PathBuf>>>,
    /// What this plugin published.
    records: Records,
}

impl Node {
    pub fn new(args: CsiArgs, exe: PathBuf, records: Records) -> Node {
        Node {
            args,
            exe,
            busy: Arc::new(Mutex::new(HashSet::new())),
            records,
        }
    }

    /// Note a publish (or staging) at `plan`'s target, a bind of the mount
    /// at `staging` where one is given; a failure to is an error (an
    /// unrecorded mount could not be unpublished).
    pub(super) fn note(&self, plan: &Plan, created: bool, staging: Option<&Path>) -> Result<(), Status> {
        self.records
            .put(&Record {
                volume_id: plan.volume_id.clone(),
                target: plan.target.clone(),
                created,
                staging: staging.map(Path::to_path_buf),
            })
            .map_err(|e| Status::internal(format!("cannot record the publish of {}: {e}", plan.target.display())))
    }

    /// What this plugin published and staged.
    pub(super) fn records(&self) -> &Records {
        &self.records
    }

    /// Run `nzfs ARGS` with `env` added; its one-line message on failure.
    fn nzfs(&self, args: &[&str], env: &[(String, String)]) -> Result<String, (i32, String)> {
        let out = Command::new(&self.exe)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .map_err(|e| (1, format!("cannot run {}: {e}", self.exe.display())))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let err = crate::store::redact_text(&err);
        let line = err
            .lines()
            .find(|l| l.starts_with("nzfs: ") || l.starts_with("error: "))
            .unwrap_or_else(|| err.lines().next().unwrap_or("failed"));
        Err((
            out.status.code().unwrap_or(1),
            line.trim_start_matches("nzfs: ").to_string(),
        ))
    }

    fn publish(&self, plan: &Plan) -> Result<(), Status> {
        let shown = format!("nzfs:{}", crate::store::redact_url(&plan.store));
        if crate::daemon::is_stale(&plan.target) {
            tracing::warn!(target = %plan.target.display(), "a dead mount at the target: unmounting it first");
            let _ = self.nzfs(&["unmount", "--lazy", &plan.target.to_string_lossy()], &[]);
        }
        if let Some((fstype, source)) = mounted_at(&plan.target) {
            if fstype == "fuse.nzfs" && source == shown {
                tracing::info!(volume = %plan.volume_id, target = %plan.target.display(), "already published");
                // A mount of this volume's store made before records were kept.
                if self.records.get(&plan.target).is_none() {
                    self.note(plan, false, None)?;
                }
                return Ok(());
            }
            return Err(Status::new(
                Code::AlreadyExists,
                format!(
                    "{} is already a mount of {source} ({fstype}), not of {}",
                    plan.target.display(),
                    crate::store::redact_url(&plan.store)
                ),
            ));
        }
        if !crate::store::is_url(&plan.store) && !Path::new(&plan.store).exists() {
            return Err(Status::new(
                Code::NotFound,
                format!(
                    "store {}: no such file or directory",
                    crate::store::redact_url(&plan.store)
                ),
            ));
        }
        let created = !plan.target.exists();
        std::fs::create_dir_all(&plan.target)
            .map_err(|e| Status::internal(format!("cannot create {}: {e}", plan.target.display())))?;
        let target = plan.target.to_string_lossy().into_owned();
        // The store's secrets, if its URL holds any, go in the environment.
        let shown_store = crate::store::redact_url(&plan.store);
        let mut env = plan.env.clone();
        if shown_store != plan.store {
            env.push((crate::daemon::STORE_ENV.to_string(), plan.store.clone()));
        }
        let mut args: Vec<String> = vec!["mount".into(), shown_store, target.clone()];
        args.extend(plan.flags.iter().cloned());
        if let Some(dir) = &self.args.log_dir {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            target.hash(&mut h);
            let name: String = plan
                .volume_id
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
                .take(64)
                .collect();
            args.extend([
                "--log-file".into(),
                dir.join(format!("{name}-{:08x}.log", h.finish() as u32))
                    .display()
                    .to_string(),
            ]);
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let secrets: Vec<&str> = plan.env.iter().map(|(k, _)| k.as_str()).collect();
        tracing::info!(volume = %plan.volume_id, target = %target, args = ?&argv[1..], secrets = ?secrets, "publishing");
        match self.nzfs(&argv, &env) {
            Ok(out) => {
                let pid = out
                    .split("daemon pid ")
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|p| p.parse::<u32>().ok());
                if let (Some(cgroup), Some(pid)) = (&self.args.mount_cgroup, pid) {
                    let moved = std::fs::create_dir_all(cgroup)
                        .and_then(|()| std::fs::write(cgroup.join("cgroup.procs"), pid.to_string()));
                    match moved {
                        Ok(()) => tracing::info!(pid, cgroup = %cgroup.display(), "moved the mount daemon"),
                        Err(e) => {
                            tracing::warn!(pid, cgroup = %cgroup.display(), "could not move the mount daemon: {e}; it ends with the plugin's container")
                        }
                    }
                }
                tracing::info!(volume = %plan.volume_id, target = %target, pid = ?pid, "published");
                if let Err(e) = self.note(plan, created, None) {
                    let _ = self.nzfs(&["unmount", "--lazy", &target], &[]);
                    return Err(e);
                }
                Ok(())
            }
            Err((code, msg)) => {
                if created {
                    let _ = std::fs::remove_dir(&plan.target);
                }
                tracing::warn!(volume = %plan.volume_id, target = %target, "publish failed: {msg}");
                // `nzfs mount`'s exit status says what kind of failure it was.
                let code = match u8::try_from(code) {
                    Ok(2) => Code::InvalidArgument,
                    Ok(crate::cli::EXIT_NOT_FOUND) => Code::NotFound,
                    _ => Code::Internal,
                };
                Err(Status::new(code, msg))
            }
        }
    }

    /// Undo what the record of `target` says this plugin did there: unmount
    /// its nzfs mount, remove the directory if the publish created it. A
    /// mount or directory with no record is left alone.
    pub(super) fn unpublish(&self, volume_id: &str, target: &Path) -> Result<(), Status> {
        let record = self.records.get(target);
        let t = target.to_string_lossy();
        if let Some((fstype, source)) = mounted_at(target) {
            if fstype != "fuse.nzfs" {
                return Err(precondition(format!(
                    "{} is a {fstype} mount of {source}, not an nzfs one",
                    target.display()
                )));
            }
            let Some(record) = &record else {
                return Err(precondition(format!(
                    "{} is an nzfs mount this plugin did not make (no record in its state directory); \
                     unmount it yourself (nzfs unmount {t})",
                    target.display()
                )));
            };
            if record.volume_id != volume_id {
                return Err(precondition(format!(
                    "{} holds volume {:?}, not {volume_id:?}",
                    target.display(),
                    record.volume_id
                )));
            }
            if record.staging.is_some() {
                // A bind of a staged mount: only the bind goes.
                self.unbind(record)?;
            } else {
                if let Err((_, msg)) = self.nzfs(&["unmount", &t], &[]) {
                    tracing::warn!(target = %t, "unmount: {msg}; detaching it lazily");
                    self.nzfs(&["unmount", "--lazy", &t], &[])
                        .map_err(|(_, msg)| Status::internal(format!("unmount {t}: {msg}")))?;
                }
                tracing::info!(volume = %volume_id, target = %t, "unpublished");
            }
        }
        if record.as_ref().is_some_and(|r| r.created && r.volume_id == volume_id) {
            match std::fs::remove_dir(target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Status::internal(format!("cannot remove {}: {e}", target.display()))),
            }
        }
        self.records
            .remove(target)
            .map_err(|e| Status::internal(format!("cannot forget the publish of {t}: {e}")))
    }
}

impl Node {
    /// Run `work` on the blocking pool as the one operation on `path` (a
    /// second is ABORTED), once `path` is found to be reached through no
    /// symlink below the target root.
    async fn on_path(
        &self,
        path: PathBuf,
        work: impl FnOnce(&Node) -> Result<(), Status> + Send + 'static,
    ) -> Result<(), Status> {
        let held = Held::take(&self.busy, &path)?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let _held = held;
            no_symlink_below(&path, &this.args.target_root)?;
            work(&this)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
    }
}

/// A target held by one publish or unpublish; released on drop.
struct Held {
    busy: Arc<Mutex<HashSet<PathBuf>>>,
    target: PathBuf,
}

impl Held {
    fn take(busy: &Arc<Mutex<HashSet<PathBuf>>>, target: &Path) -> Result<Held, Status> {
        let mut set = crate::sync::lock(busy);
        if !set.insert(target.to_path_buf()) {
            return Err(Status::aborted(format!(
                "an operation on {} is in progress; retry later",
                target.display()
            )));
        }
        Ok(Held {
            busy: Arc::clone(busy),
            target: target.to_path_buf(),
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        crate::sync::lock(&self.busy).remove(&self.target);
    }
}

#[tonic::async_trait]
impl proto::node_server::Node for Node {
    async fn node_publish_volume(
        &self,
        request: tonic::Request<proto::NodePublishVolumeRequest>,
    ) -> Reply<proto::NodePublishVolumeResponse> {
        let req = request.get_ref();
        let plan = plan(req, &self.args.target_root)?;
        let staging = match req.staging_target_path.as_str() {
            "" => None,
            s => Some(target_of(s, &self.args.target_root)?),
        };
        self.on_path(plan.target.clone(), move |this| match &staging {
            Some(staging) => {
                no_symlink_below(staging, &this.args.target_root)?;
                this.bind(staging, &plan)
            }
            None => this.publish(&plan),
        })
        .await?;
        Ok(tonic::Response::new(proto::NodePublishVolumeResponse {}))
    }

    async fn node_unpublish_volume(
        &self,
        request: tonic::Request<proto::NodeUnpublishVolumeRequest>,
    ) -> Reply<proto::NodeUnpublishVolumeResponse> {
        let req = request.into_inner();
        if req.volume_id.is_empty() {
            return Err(invalid("volume_id is missing"));
        }
        let target = target_of(&req.target_path, &self.args.target_root)?;
        self.on_path(target.clone(), move |this| this.unpublish(&req.volume_id, &target))
            .await?;
        Ok(tonic::Response::new(proto::NodeUnpublishVolumeResponse {}))
    }

    /// STAGE_UNSTAGE_VOLUME: a volume is mounted once per node (`stage.rs`).
    async fn node_get_capabilities(
        &self,
        _: tonic::Request<proto::NodeGetCapabilitiesRequest>,
    ) -> Reply<proto::NodeGetCapabilitiesResponse> {
        use proto::node_service_capability::{Rpc, Type, rpc};
        Ok(tonic::Response::new(proto::NodeGetCapabilitiesResponse {
            capabilities: vec![proto::NodeServiceCapability {
                r#type: Some(Type::Rpc(Rpc {
                    r#type: rpc::Type::StageUnstageVolume as i32,
                })),
            }],
        }))
    }

    async fn node_get_info(&self, _: tonic::Request<proto::NodeGetInfoRequest>) -> Reply<proto::NodeGetInfoResponse> {
        Ok(tonic::Response::new(proto::NodeGetInfoResponse {
            node_id: self.args.node_id.clone(),
            max_volumes_per_node: 0,
            accessible_topology: None,
        }))
    }

    /// The volume's one mount on this node, at the staging path.
    async fn node_stage_volume(
        &self,
        request: tonic::Request<proto::NodeStageVolumeRequest>,
    ) -> Reply<proto::NodeStageVolumeResponse> {
        let plan = plan(&super::plan::as_publish(request.get_ref()), &self.args.target_root)?;
        self.on_path(plan.target.clone(), move |this| this.publish(&plan))
            .await?;
        Ok(tonic::Response::new(proto::NodeStageVolumeResponse {}))
    }

    /// The volume's mount on this node unmounted, once no pod holds it.
    async fn node_unstage_volume(
        &self,
        request: tonic::Request<proto::NodeUnstageVolumeRequest>,
    ) -> Reply<proto::NodeUnstageVolumeResponse> {
        let req = request.into_inner();
        if req.volume_id.is_empty() {
            return Err(invalid("volume_id is missing"));
        }
        let staging = target_of(&req.staging_target_path, &self.args.target_root)?;
        self.on_path(staging.clone(), move |this| this.unstage(&req.volume_id, &staging))
            .await?;
        Ok(tonic::Response::new(proto::NodeUnstageVolumeResponse {}))
    }

    async fn node_get_volume_stats(
        &self,
        _: tonic::Request<proto::NodeGetVolumeStatsRequest>,
    ) -> Reply<proto::NodeGetVolumeStatsResponse> {
        Err(Status::unimplemented("no volume stats"))
    }

    async fn node_expand_volume(
        &self,
        _: tonic::Request<proto::NodeExpandVolumeRequest>,
    ) -> Reply<proto::NodeExpandVolumeResponse> {
        Err(Status::unimplemented("nzfs volumes are read-only"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One operation per target: a second on the same target is ABORTED,
    /// another target goes ahead, and the hold ends with the first.
    #[test]
    fn one_operation_per_target() {
        let busy = Arc::new(Mutex::new(HashSet::new()));
        let (a, b) = (Path::new("/k/a"), Path::new("/k/b"));
        let first = Held::take(&busy, a).unwrap();
        assert_eq!(Held::take(&busy, a).err().unwrap().code(), Code::Aborted);
        assert!(Held::take(&busy, b).is_ok());
        drop(first);
        assert!(Held::take(&busy, a).is_ok());
    }
}
