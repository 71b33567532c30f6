//! The CSI Node service: NodePublishVolume makes the target path an nzfs
//! mount of the volume's store, NodeUnpublishVolume unmounts it. A request
//! is first turned into a [`Plan`] (pure, unit-tested: every refusal and
//! its gRPC code), then carried out by running this binary's own
//! `nzfs mount` / `nzfs unmount`, one call at a time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use tonic::{Code, Status};

use crate::daemon::unescape_mount;

use super::proto::volume_capability::{AccessType, access_mode::Mode};
use super::proto::{self};
use super::{CsiArgs, Reply};

/// Volume attributes the kubelet adds itself (`podInfoOnMount`).
const KUBELET_PREFIX: &str = "csi.storage.k8s.io/";

/// Volume attributes that are not a mount option: `store`, and those an
/// operator must not hand to a workload (`log-file`: the plugin sets it;
/// `follow-symlinks`: would show other users what a store's symlinks point
/// at).
const REFUSED: &[&str] = &["log-file", "follow-symlinks", "foreground"];

/// What one NodePublishVolume asks for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub volume_id: String,
    pub store: String,
    pub target: PathBuf,
    /// Flags for `nzfs mount` after STORE and TARGET (no secrets).
    pub flags: Vec<String>,
    /// The secrets, as the daemon's environment.
    pub env: Vec<(String, String)>,
}

fn invalid(msg: impl Into<String>) -> Status {
    Status::new(Code::InvalidArgument, msg)
}

fn precondition(msg: impl Into<String>) -> Status {
    Status::new(Code::FailedPrecondition, msg)
}

/// Check a NodePublishVolume request and say what to run.
pub fn plan(req: &proto::NodePublishVolumeRequest) -> Result<Plan, Status> {
    if req.volume_id.is_empty() {
        return Err(invalid("volume_id is missing"));
    }
    if req.target_path.is_empty() {
        return Err(invalid("target_path is missing"));
    }
    let target = PathBuf::from(&req.target_path);
    if !target.is_absolute() {
        return Err(invalid(format!("target_path {} is not absolute", req.target_path)));
    }
    let cap = req
        .volume_capability
        .as_ref()
        .ok_or_else(|| invalid("volume_capability is missing"))?;
    let mode = cap
        .access_mode
        .as_ref()
        .map(|m| Mode::try_from(m.mode).unwrap_or(Mode::Unknown))
        .ok_or_else(|| invalid("volume_capability.access_mode is missing"))?;
    if !matches!(mode, Mode::SingleNodeReaderOnly | Mode::MultiNodeReaderOnly) {
        return Err(precondition(format!(
            "access mode {}: nzfs volumes are read-only (use ReadOnlyMany or a reader-only mode)",
            mode.as_str_name()
        )));
    }
    let mut flags = vec!["-o".to_string(), "allow_other".to_string()];
    match &cap.access_type {
        Some(AccessType::Mount(m)) => {
            if !["", "nzfs", "fuse.nzfs"].contains(&m.fs_type.as_str()) {
                return Err(precondition(format!(
                    "fs_type {}: nzfs volumes are fuse.nzfs",
                    m.fs_type
                )));
            }
            for f in &m.mount_flags {
                flags.extend(["-o".to_string(), f.clone()]);
            }
        }
        Some(AccessType::Block(_)) => return Err(precondition("block access: nzfs volumes are filesystems")),
        None => return Err(invalid("volume_capability.access_type is missing")),
    }
    if !req.readonly {
        return Err(precondition(
            "readonly is false: nzfs volumes are read-only (set readOnly: true on the pod's volume)",
        ));
    }
    let store = req
        .volume_context
        .get("store")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("volume attribute `store` is missing (a path on the node, or a URL)"))?
        .clone();
    if !store.contains("://") && !store.starts_with('/') {
        return Err(invalid(format!(
            "store {store}: a local store must be an absolute path"
        )));
    }
    let mut keys: Vec<&String> = req.volume_context.keys().collect();
    keys.sort();
    for key in keys {
        let value = &req.volume_context[key];
        if key == "store" || key.starts_with(KUBELET_PREFIX) {
            continue;
        }
        if REFUSED.contains(&key.as_str()) {
            return Err(invalid(format!("volume attribute {key} is not allowed in a volume")));
        }
        let o = key.replace('-', "_");
        if crate::cli::O_SETTINGS.iter().any(|(name, _)| *name == o) {
            if key == "store-option" {
                // Several options, one per line or space-separated.
                for opt in value.split_whitespace() {
                    flags.extend(["--store-option".to_string(), opt.to_string()]);
                }
            } else {
                flags.extend([format!("--{key}"), value.clone()]);
            }
        } else if crate::cli::O_SWITCHES.iter().any(|(name, _)| *name == o) {
            match value.as_str() {
                "true" => flags.push(format!("--{key}")),
                "false" | "" => {}
                other => {
                    return Err(invalid(format!(
                        "volume attribute {key}: {other:?} is not true or false"
                    )));
                }
            }
        } else {
            return Err(invalid(format!(
                "volume attribute {key} is not an nzfs mount option (nzfs mount --help lists them)"
            )));
        }
    }
    let mut env = Vec::new();
    for (k, v) in &req.secrets {
        let ok = !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(invalid(format!("secret key {k:?} is not an environment variable name")));
        }
        env.push((k.clone(), v.clone()));
    }
    env.sort();
    Ok(Plan {
        volume_id: req.volume_id.clone(),
        store,
        target,
        flags,
        env,
    })
}

/// The file system type and source of the mount at `target`, from
/// `/proc/self/mountinfo` (the last one, if several are stacked).
pub fn mounted_at(target: &Path) -> Option<(String, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let target = target.to_string_lossy();
    info.lines().rev().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let point = unescape_mount(left.split(' ').nth(4)?);
        let mut r = right.split(' ');
        let (fstype, source) = (r.next()?.to_string(), unescape_mount(r.next()?));
        (point == target).then_some((fstype, source))
    })
}

#[derive(Clone)]
pub struct Node {
    args: CsiArgs,
    exe: PathBuf,
    /// One publish or unpublish at a time.
    busy: Arc<Mutex<()>>,
}

impl Node {
    pub fn new(args: CsiArgs, exe: PathBuf) -> Node {
        Node {
            args,
            exe,
            busy: Arc::new(Mutex::new(())),
        }
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
        if !plan.store.contains("://") && !Path::new(&plan.store).exists() {
            return Err(Status::new(
                Code::NotFound,
                format!("store {}: no such file or directory", plan.store),
            ));
        }
        std::fs::create_dir_all(&plan.target)
            .map_err(|e| Status::internal(format!("cannot create {}: {e}", plan.target.display())))?;
        let target = plan.target.to_string_lossy().into_owned();
        let mut args: Vec<String> = vec!["mount".into(), plan.store.clone(), target.clone()];
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
        match self.nzfs(&argv, &plan.env) {
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
                Ok(())
            }
            Err((code, msg)) => {
                let _ = std::fs::remove_dir(&plan.target);
                tracing::warn!(volume = %plan.volume_id, target = %target, "publish failed: {msg}");
                let lower = msg.to_ascii_lowercase();
                let code = if code == 2 {
                    Code::InvalidArgument
                } else if lower.contains("no such file")
                    || lower.contains("not a zarr store")
                    || lower.contains("not found")
                    || lower.contains("nosuchbucket")
                {
                    Code::NotFound
                } else {
                    Code::Internal
                };
                Err(Status::new(code, msg))
            }
        }
    }

    fn unpublish(&self, volume_id: &str, target: &Path) -> Result<(), Status> {
        if let Some((fstype, source)) = mounted_at(target) {
            if fstype != "fuse.nzfs" {
                return Err(precondition(format!(
                    "{} is a {fstype} mount of {source}, not an nzfs one",
                    target.display()
                )));
            }
            let t = target.to_string_lossy();
            if let Err((_, msg)) = self.nzfs(&["unmount", &t], &[]) {
                tracing::warn!(target = %t, "unmount: {msg}; detaching it lazily");
                self.nzfs(&["unmount", "--lazy", &t], &[])
                    .map_err(|(_, msg)| Status::internal(format!("unmount {t}: {msg}")))?;
            }
            tracing::info!(volume = %volume_id, target = %t, "unpublished");
        }
        match std::fs::remove_dir(target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Status::internal(format!("cannot remove {}: {e}", target.display()))),
        }
    }
}

fn busy<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[tonic::async_trait]
impl proto::node_server::Node for Node {
    async fn node_publish_volume(
        &self,
        request: tonic::Request<proto::NodePublishVolumeRequest>,
    ) -> Reply<proto::NodePublishVolumeResponse> {
        let plan = plan(request.get_ref())?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let _one = busy(&this.busy);
            this.publish(&plan)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
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
        if req.target_path.is_empty() {
            return Err(invalid("target_path is missing"));
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let _one = busy(&this.busy);
            this.unpublish(&req.volume_id, Path::new(&req.target_path))
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
        Ok(tonic::Response::new(proto::NodeUnpublishVolumeResponse {}))
    }

    /// No STAGE_UNSTAGE_VOLUME: there is no staging step.
    async fn node_get_capabilities(
        &self,
        _: tonic::Request<proto::NodeGetCapabilitiesRequest>,
    ) -> Reply<proto::NodeGetCapabilitiesResponse> {
        Ok(tonic::Response::new(proto::NodeGetCapabilitiesResponse {
            capabilities: Vec::new(),
        }))
    }

    async fn node_get_info(&self, _: tonic::Request<proto::NodeGetInfoRequest>) -> Reply<proto::NodeGetInfoResponse> {
        Ok(tonic::Response::new(proto::NodeGetInfoResponse {
            node_id: self.args.node_id.clone(),
            max_volumes_per_node: 0,
            accessible_topology: None,
        }))
    }

    async fn node_stage_volume(
        &self,
        _: tonic::Request<proto::NodeStageVolumeRequest>,
    ) -> Reply<proto::NodeStageVolumeResponse> {
        Err(Status::unimplemented("no staging: NodeGetCapabilities advertises none"))
    }

    async fn node_unstage_volume(
        &self,
        _: tonic::Request<proto::NodeUnstageVolumeRequest>,
    ) -> Reply<proto::NodeUnstageVolumeResponse> {
        Err(Status::unimplemented("no staging: NodeGetCapabilities advertises none"))
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
    use proto::volume_capability::{AccessMode, MountVolume};

    fn request(mode: Mode) -> proto::NodePublishVolumeRequest {
        proto::NodePublishVolumeRequest {
            volume_id: "era5".into(),
            target_path: "/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/era5/mount".into(),
            volume_capability: Some(proto::VolumeCapability {
                access_mode: Some(AccessMode { mode: mode as i32 }),
                access_type: Some(AccessType::Mount(MountVolume::default())),
            }),
            readonly: true,
            volume_context: [
                ("store", "s3://bucket/era5.zarr"),
                ("cache-size", "64MiB"),
                ("anonymous", "true"),
                ("store-option", "aws_region=eu-west-1\naws_endpoint=http://minio:9000"),
                ("csi.storage.k8s.io/pod.name", "reader-0"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            secrets: [("AWS_SECRET_ACCESS_KEY".to_string(), "s3cr3t".to_string())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_reader_volume_plans_its_mount_with_secrets_in_the_environment() {
        let p = plan(&request(Mode::MultiNodeReaderOnly)).unwrap();
        assert_eq!(p.store, "s3://bucket/era5.zarr");
        assert_eq!(
            p.flags,
            [
                "-o",
                "allow_other",
                "--anonymous",
                "--cache-size",
                "64MiB",
                "--store-option",
                "aws_region=eu-west-1",
                "--store-option",
                "aws_endpoint=http://minio:9000"
            ]
        );
        assert!(!p.flags.iter().any(|f| f.contains("s3cr3t")));
        assert_eq!(p.env, [("AWS_SECRET_ACCESS_KEY".to_string(), "s3cr3t".to_string())]);
        assert!(plan(&request(Mode::SingleNodeReaderOnly)).is_ok());
    }

    #[test]
    fn refusals_carry_their_codes() {
        let code = |r: proto::NodePublishVolumeRequest| plan(&r).unwrap_err().code();
        for mode in [
            Mode::SingleNodeWriter,
            Mode::MultiNodeMultiWriter,
            Mode::SingleNodeSingleWriter,
        ] {
            assert_eq!(code(request(mode)), Code::FailedPrecondition, "{mode:?}");
        }
        let ok = || request(Mode::MultiNodeReaderOnly);
        let with = |f: &dyn Fn(&mut proto::NodePublishVolumeRequest)| {
            let mut r = ok();
            f(&mut r);
            code(r)
        };
        type Edit = Box<dyn Fn(&mut proto::NodePublishVolumeRequest)>;
        let context = |k: &'static str, v: &'static str| -> Edit {
            Box::new(move |r| {
                r.volume_context.insert(k.into(), v.into());
            })
        };
        let cases: Vec<(Edit, Code)> = vec![
            (Box::new(|r| r.readonly = false), Code::FailedPrecondition),
            (Box::new(|r| r.volume_id.clear()), Code::InvalidArgument),
            (Box::new(|r| r.target_path.clear()), Code::InvalidArgument),
            (Box::new(|r| r.target_path = "rel/path".into()), Code::InvalidArgument),
            (Box::new(|r| r.volume_capability = None), Code::InvalidArgument),
            (
                Box::new(|r| {
                    r.volume_context.remove("store");
                }),
                Code::InvalidArgument,
            ),
            (context("store", "data.zarr"), Code::InvalidArgument),
            (context("cache_sise", "1"), Code::InvalidArgument),
            (context("follow-symlinks", "true"), Code::InvalidArgument),
            (context("anonymous", "yes"), Code::InvalidArgument),
            (
                Box::new(|r| {
                    r.secrets.insert("BAD KEY".into(), "x".into());
                }),
                Code::InvalidArgument,
            ),
            (
                Box::new(|r| {
                    r.volume_capability.as_mut().unwrap().access_type = Some(AccessType::Block(Default::default()))
                }),
                Code::FailedPrecondition,
            ),
        ];
        for (i, (edit, want)) in cases.into_iter().enumerate() {
            assert_eq!(with(&*edit), want, "case {i}");
        }
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape_mount(r"/var/lib/a\040b"), "/var/lib/a b");
        assert_eq!(unescape_mount(r"nzfs:/x\134y"), r"nzfs:/x\y");
        assert_eq!(unescape_mount(r"end\04"), r"end\04");
        // This test's own root is a mount point with a type.
        assert!(mounted_at(Path::new("/")).is_some());
    }
}
