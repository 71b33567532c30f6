//! The CSI plugin under test: `nzfs csi` on a unix socket in a test's
//! directory, a CSI client for it (tonic, as the kubelet dials it), the
//! requests the tests send, and what they look at (daemons, command
//! lines, the decoded cache's counts). For tests/csi.rs and
//! tests/csi_stage.rs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nzfs::csi::proto;
use proto::volume_capability::{AccessMode, AccessType, MountVolume, access_mode::Mode};
use tonic::transport::Channel;

/// A running `nzfs csi`, killed on drop.
pub struct Plugin {
    child: Child,
    pub socket: PathBuf,
    log: PathBuf,
}

impl Plugin {
    pub fn start(dir: &Path, extra: &[&str]) -> Plugin {
        let socket = dir.join("csi.sock");
        static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = dir.join(format!("plugin-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_nzfs"))
            .args(["csi", "--endpoint"])
            .arg(format!("unix://{}", socket.display()))
            .args(["--node-id", "node-1"])
            .arg("--target-root")
            .arg(dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start nzfs csi");
        let start = Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(start.elapsed() < Duration::from_secs(10), "the plugin never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Plugin { child, socket, log }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("the plugin's log:\n{}", self.log());
        }
    }
}

/// A target path unmounted (lazily) on drop, should a test fail before
/// unpublishing it.
pub struct Target(pub PathBuf);

impl Drop for Target {
    fn drop(&mut self) {
        if nzfs::daemon::is_mount_point(&self.0) || nzfs::daemon::is_stale(&self.0) {
            let _ = Command::new("fusermount3").args(["-u", "-z"]).arg(&self.0).status();
        }
    }
}

pub async fn channel(socket: &Path) -> Channel {
    let socket = socket.to_path_buf();
    tonic::transport::Endpoint::try_from("http://[::]:50051")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(socket).await?,
                ))
            }
        }))
        .await
        .expect("connect to the plugin")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn publish_request(store: &str, target: &Path, mode: Mode) -> proto::NodePublishVolumeRequest {
    proto::NodePublishVolumeRequest {
        volume_id: "vol-1".into(),
        target_path: target.to_string_lossy().into(),
        volume_capability: Some(proto::VolumeCapability {
            access_mode: Some(AccessMode { mode: mode as i32 }),
            access_type: Some(AccessType::Mount(MountVolume::default())),
        }),
        readonly: true,
        volume_context: HashMap::from([
            ("store".to_string(), store.to_string()),
            ("cache-size".to_string(), "32MiB".to_string()),
            ("csi.storage.k8s.io/pod.name".to_string(), "reader-0".to_string()),
        ]),
        ..Default::default()
    }
}

pub fn unpublish_request(target: &Path) -> proto::NodeUnpublishVolumeRequest {
    proto::NodeUnpublishVolumeRequest {
        volume_id: "vol-1".into(),
        target_path: target.to_string_lossy().into(),
    }
}

pub fn expected_t2m() -> Vec<u8> {
    std::fs::read(super::data_dir().join("expected/sample/t2m.bin")).unwrap()
}

/// The pid of the nzfs daemon serving `target` (its command line names it).
pub fn daemon_of(target: &Path) -> Option<i32> {
    let t = target.to_str().unwrap();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if args.iter().any(|a| *a == b"--daemon-child") && args.contains(&t.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// Every process's command line, as one text.
pub fn all_command_lines() -> String {
    let mut all = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            all.push_str(&String::from_utf8_lossy(&cmd));
            all.push('\n');
        }
    }
    all
}

/// The venv's Python with grpcio and grpcio-tools (scripts/setup.sh
/// --test installs them), or `None` outside CI when it is missing.
pub fn grpcio_python() -> Option<PathBuf> {
    let venv = std::env::var_os("NZFS_VENV").map_or_else(|| PathBuf::from(".venv"), PathBuf::from);
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(venv).join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import grpc, grpc_tools"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "grpcio missing from the venv (scripts/setup.sh --test installs it)"
        );
        eprintln!("skipping: no grpcio in the venv (run scripts/setup.sh --test)");
        return None;
    }
    Some(python)
}

pub fn stage_request(store: &str, staging: &Path, volume: &str) -> proto::NodeStageVolumeRequest {
    let p = publish_request(store, staging, Mode::MultiNodeReaderOnly);
    proto::NodeStageVolumeRequest {
        volume_id: volume.into(),
        staging_target_path: staging.to_string_lossy().into(),
        volume_capability: p.volume_capability,
        volume_context: p.volume_context,
        ..Default::default()
    }
}

pub fn bind_request(store: &str, staging: &Path, target: &Path) -> proto::NodePublishVolumeRequest {
    proto::NodePublishVolumeRequest {
        staging_target_path: staging.to_string_lossy().into(),
        ..publish_request(store, target, Mode::MultiNodeReaderOnly)
    }
}

/// How many nzfs daemons run with a mount point below `dir`.
pub fn daemons(dir: &Path) -> usize {
    let dir = dir.to_str().unwrap();
    all_command_lines()
        .lines()
        .filter(|l| l.contains("--daemon-child") && l.contains(dir))
        .count()
}

pub fn decodes(mp: &Path) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .args(["status", "--json"])
        .arg(mp)
        .output()
        .unwrap();
    let doc = nzfs::json::parse(&out.stdout).unwrap();
    doc.get("cache")
        .and_then(|c| c.get("decodes"))
        .and_then(|d| d.as_u64())
        .unwrap()
}

/// Run tests/csi_grpcio.py with `python` against the plugin on `socket`,
/// with `args`; it must succeed.
pub fn grpcio<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(python: &Path, socket: &Path, args: &[S]) {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/csi_grpcio.py");
    let out = Command::new(python)
        .arg(&client)
        .arg(socket)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
