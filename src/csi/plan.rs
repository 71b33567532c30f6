//! A NodePublishVolume request (or a NodeStageVolume one, as the publish
//! at its staging path), checked: the one vocabulary of a volume's
//! options (attributes and mount flags alike), the Secret variables a
//! volume may set, and its target path normalised and confined. Pure but
//! for the symlink check, and unit-tested: every refusal and its gRPC code.
//!
//! Invariants: a volume's attributes and mount flags pass one check with
//! one vocabulary ([`volume_option`]); a Secret sets only
//! [`SECRET_VARIABLES`]; a target is normalised and lies below the target
//! root, reached through no symlink.

use std::path::{Component, Path, PathBuf};

use tonic::{Code, Status};

use super::proto::volume_capability::{AccessType, access_mode::Mode};
use super::proto::{self};

/// Volume attributes the kubelet adds itself (`podInfoOnMount`).
const KUBELET_PREFIX: &str = "csi.storage.k8s.io/";

/// Settings that no volume may carry, as an attribute or a mount flag: the
/// plugin sets `log_file` itself; `follow_symlinks` would serve pods any
/// node file a store's symlink names; `uid`, `gid` and `umask` would
/// replace the store's owners and modes; `allow_root`, `dev`, `suid`,
/// `exec`, `fsname`, `subtype`, `nonempty` and `auto_unmount` change what
/// the plugin decides for every volume.
const REFUSED: &[&str] = &[
    "log_file",
    "follow_symlinks",
    "foreground",
    "uid",
    "gid",
    "umask",
    "allow_root",
    "dev",
    "suid",
    "exec",
    "rw",
    "fsname",
    "subtype",
    "nonempty",
    "auto_unmount",
    "max_read",
];

/// Kernel mount flags a volume may add: each only narrows what the plugin
/// already mounts (read-only, `allow_other` with the store's modes).
const KERNEL_FLAGS: &[&str] = &[
    "ro",
    "nodev",
    "nosuid",
    "noexec",
    "noatime",
    "nodiratime",
    "relatime",
    "allow_other",
    "default_permissions",
];

/// The environment variables a Secret may set: credentials, regions and
/// endpoints that the object-store back ends read by value. Anything else
/// is refused: the loader's (`LD_PRELOAD`, `LD_LIBRARY_PATH`) and libc's
/// (`GLIBC_TUNABLES`) would run or bend code in a root process, and those
/// that name a file on the node (`AWS_SHARED_CREDENTIALS_FILE`,
/// `AWS_PROFILE`, `GOOGLE_APPLICATION_CREDENTIALS`, token files) would
/// read node files as root and send them to a server the volume chooses.
pub const SECRET_VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT",
    "AWS_ENDPOINT_URL",
    "AWS_REQUEST_PAYER",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "GOOGLE_BUCKET",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_TOKEN",
    "AZURE_STORAGE_CLIENT_ID",
    "AZURE_STORAGE_CLIENT_SECRET",
    "AZURE_STORAGE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_TENANT_ID",
    "AZURE_STORAGE_ENDPOINT",
];

/// Where a volume's option came from, for messages.
#[derive(Clone, Copy)]
enum Origin {
    Attribute,
    MountFlag,
}

/// The one check of a volume's option, whether a volume attribute
/// (`cache-size: 64MiB`, `anonymous: "true"`) or a mount flag
/// (`cache_size=64MiB`, `anonymous`, `noatime`): `name` in `_` form,
/// `value` `None` for a bare flag. Adds `nzfs mount` flags to `flags`.
fn volume_option(origin: Origin, name: &str, value: Option<&str>, flags: &mut Vec<String>) -> Result<(), Status> {
    let shown = match (origin, value) {
        (Origin::Attribute, _) => format!("volume attribute {}", name.replace('_', "-")),
        (Origin::MountFlag, Some(v)) => format!("mount flag {name}={v}"),
        (Origin::MountFlag, None) => format!("mount flag {name}"),
    };
    if REFUSED.contains(&name) {
        return Err(invalid(format!(
            "{shown} is not allowed in a volume: the plugin decides it for every volume"
        )));
    }
    let option = crate::cli::o_option(name);
    if let Some(flag) = option.filter(|o| o.takes_value).map(|o| o.flag.as_str()) {
        let Some(value) = value else {
            return Err(invalid(format!("{shown} needs a value ({name}=VALUE)")));
        };
        if name == "store_option" {
            // Several options, one per line or space-separated.
            for opt in value.split_whitespace() {
                flags.extend([flag.to_string(), opt.to_string()]);
            }
        } else {
            flags.extend([flag.to_string(), value.to_string()]);
        }
        return Ok(());
    }
    let switch = option.filter(|o| !o.takes_value).map(|o| o.flag.as_str());
    let kernel = KERNEL_FLAGS.contains(&name);
    if switch.is_none() && !kernel {
        return Err(invalid(format!(
            "{shown} is not an nzfs volume option; a volume may set {} and the kernel flags {}",
            crate::cli::o_options()
                .iter()
                .map(|o| o.name.as_str())
                .filter(|n| !REFUSED.contains(n))
                .collect::<Vec<_>>()
                .join(", "),
            KERNEL_FLAGS.join(", ")
        )));
    }
    let on = match value {
        None | Some("true") => true,
        Some("false" | "") => false,
        Some(other) => return Err(invalid(format!("{shown}: {other:?} is not true or false"))),
    };
    if on {
        match switch {
            Some(flag) => flags.push(flag.to_string()),
            None => flags.extend(["-o".to_string(), name.to_string()]),
        }
    }
    Ok(())
}

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

pub(super) fn invalid(msg: impl Into<String>) -> Status {
    Status::new(Code::InvalidArgument, msg)
}

pub(super) fn precondition(msg: impl Into<String>) -> Status {
    Status::new(Code::FailedPrecondition, msg)
}

/// A request's target path, normalised (`//`, `.` and a trailing `/`
/// gone) and confined: absolute, without `..`, strictly below `root`.
pub fn target_of(raw: &str, root: &Path) -> Result<PathBuf, Status> {
    if raw.is_empty() {
        return Err(invalid("target_path is missing"));
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(invalid(format!("target_path {raw} is not absolute")));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(format!("target_path {raw} has a `..` component")));
    }
    let normal: PathBuf = path.components().collect();
    if !normal.starts_with(root) || normal == root {
        return Err(invalid(format!(
            "target_path {raw} is outside {} (nzfs csi --target-root)",
            root.display()
        )));
    }
    Ok(normal)
}

/// Refuse a target reached through a symlink below the target root (a
/// mount would land on the link's destination).
pub(super) fn no_symlink_below(target: &Path, root: &Path) -> Result<(), Status> {
    let mut at = root.to_path_buf();
    for part in target.strip_prefix(root).unwrap_or(target).components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(precondition(format!(
                    "target_path {}: {} is a symlink",
                    target.display(),
                    at.display()
                )));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// A NodeStageVolume request as the NodePublishVolume one [`plan`]
/// checks: the staging path for the target, read-only as every nzfs
/// volume is.
pub fn as_publish(req: &proto::NodeStageVolumeRequest) -> proto::NodePublishVolumeRequest {
    proto::NodePublishVolumeRequest {
        volume_id: req.volume_id.clone(),
        publish_context: req.publish_context.clone(),
        staging_target_path: String::new(),
        target_path: req.staging_target_path.clone(),
        volume_capability: req.volume_capability.clone(),
        readonly: true,
        secrets: req.secrets.clone(),
        volume_context: req.volume_context.clone(),
    }
}

/// Check a NodePublishVolume request and say what to run; `root` is the
/// directory targets must lie below.
pub fn plan(req: &proto::NodePublishVolumeRequest, root: &Path) -> Result<Plan, Status> {
    if req.volume_id.is_empty() {
        return Err(invalid("volume_id is missing"));
    }
    let target = target_of(&req.target_path, root)?;
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
            for item in m.mount_flags.iter().flat_map(|f| f.split(',')).map(str::trim) {
                if item.is_empty() {
                    continue;
                }
                let (name, value) = match item.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (item, None),
                };
                volume_option(Origin::MountFlag, &name.replace('-', "_"), value, &mut flags)?;
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
    if !crate::store::is_url(&store) && !store.starts_with('/') {
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
        volume_option(Origin::Attribute, &key.replace('-', "_"), Some(value), &mut flags)?;
    }
    let mut env = Vec::new();
    for (k, v) in &req.secrets {
        let ok = !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(invalid(format!("secret key {k:?} is not an environment variable name")));
        }
        if !SECRET_VARIABLES.contains(&k.as_str()) {
            return Err(invalid(format!(
                "secret key {k} is not a credential nzfs reads; a Secret may set only {}",
                SECRET_VARIABLES.join(", ")
            )));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proto::volume_capability::{AccessMode, MountVolume};

    const ROOT_DIR: &str = "/var/lib/kubelet";

    fn root() -> &'static Path {
        Path::new(ROOT_DIR)
    }

    /// Targets are normalised, and refused with `..`, outside the root,
    /// or at the root itself.
    #[test]
    fn targets_are_normalised_and_confined() {
        let ok = |raw: &str| target_of(raw, root()).unwrap();
        let want = Path::new("/var/lib/kubelet/pods/p/mount");
        assert_eq!(ok("/var/lib/kubelet/pods/p/mount"), want);
        assert_eq!(ok("/var/lib/kubelet//pods/./p/mount/"), want);
        for bad in [
            "",
            "rel/path",
            "/var/lib/kubelet/pods/../../../../etc",
            "/var/lib/kubelet/../kubelet/pods/p",
            "/etc/x",
            "/var/lib/kubeletx/p",
            "/var/lib/kubelet",
            "/var/lib/kubelet/",
        ] {
            assert_eq!(
                target_of(bad, root()).unwrap_err().code(),
                Code::InvalidArgument,
                "{bad:?}"
            );
        }
        // A symlink below the root is refused; a real directory passes.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
        assert!(no_symlink_below(&dir.path().join("real/new"), dir.path()).is_ok());
        let e = no_symlink_below(&dir.path().join("link/new"), dir.path()).unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition);
    }

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
        let p = plan(&request(Mode::MultiNodeReaderOnly), root()).unwrap();
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
        assert!(plan(&request(Mode::SingleNodeReaderOnly), root()).is_ok());
    }

    /// A stage is planned as a publish at its staging path, with its
    /// secrets in the environment, read-only.
    #[test]
    fn a_stage_plans_the_mount_at_its_staging_path() {
        let p = request(Mode::MultiNodeReaderOnly);
        let stage = proto::NodeStageVolumeRequest {
            volume_id: p.volume_id.clone(),
            staging_target_path: "/var/lib/kubelet/plugins/kubernetes.io/csi/nzfs.csi.nzfs.dev/ab12/globalmount".into(),
            volume_capability: p.volume_capability.clone(),
            secrets: p.secrets.clone(),
            volume_context: p.volume_context.clone(),
            ..Default::default()
        };
        let staged = plan(&as_publish(&stage), root()).unwrap();
        let published = plan(&p, root()).unwrap();
        assert_eq!(staged.target, Path::new(&stage.staging_target_path));
        assert_eq!((staged.flags, staged.env), (published.flags, published.env));
    }

    #[test]
    fn refusals_carry_their_codes() {
        let code = |r: proto::NodePublishVolumeRequest| plan(&r, root()).unwrap_err().code();
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
        let mut cases: Vec<(Edit, Code)> = vec![
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
            (context("uid", "0"), Code::InvalidArgument),
            (context("log-file", "/etc/x"), Code::InvalidArgument),
        ];
        // What a Secret may not set: the loader's, libc's, and variables
        // that name node files.
        for key in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GLIBC_TUNABLES",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_CONFIG_FILE",
            "AWS_PROFILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "PATH",
        ] {
            cases.push((
                Box::new(move |r| {
                    r.secrets.insert(key.into(), "/tmp/x".into());
                }),
                Code::InvalidArgument,
            ));
        }
        // A PersistentVolume's mountOptions pass the same check as
        // attributes, one by one and comma-separated.
        for flag in [
            "follow_symlinks",
            "uid=0,gid=0,umask=000",
            "allow_root,dev,suid",
            "log_file=/var/log/x",
            "ro,umask=000",
            "foreground",
            "rw",
            "no_such_option",
            "cache_size",
        ] {
            cases.push((
                Box::new(move |r| {
                    if let Some(AccessType::Mount(m)) = &mut r.volume_capability.as_mut().unwrap().access_type {
                        m.mount_flags = vec![flag.into()];
                    }
                }),
                Code::InvalidArgument,
            ));
        }
        let more: Vec<(Edit, Code)> = vec![(
            Box::new(|r| {
                r.volume_capability.as_mut().unwrap().access_type = Some(AccessType::Block(Default::default()))
            }),
            Code::FailedPrecondition,
        )];
        cases.extend(more);
        for (i, (edit, want)) in cases.into_iter().enumerate() {
            assert_eq!(with(&*edit), want, "case {i}");
        }
    }

    /// Mount flags within the vocabulary become the same `nzfs mount`
    /// flags as the attributes that say the same.
    #[test]
    fn mount_flags_and_attributes_share_one_vocabulary() {
        let mut r = request(Mode::MultiNodeReaderOnly);
        r.volume_context.retain(|k, _| k == "store");
        if let Some(AccessType::Mount(m)) = &mut r.volume_capability.as_mut().unwrap().access_type {
            m.mount_flags = vec!["ro,noatime".into(), "cache_size=64MiB".into(), "anonymous".into()];
        }
        let p = plan(&r, root()).unwrap();
        assert_eq!(
            p.flags,
            [
                "-o",
                "allow_other",
                "-o",
                "ro",
                "-o",
                "noatime",
                "--cache-size",
                "64MiB",
                "--anonymous"
            ]
        );
    }
}
