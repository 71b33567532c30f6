//! `nzfs csi`, the Kubernetes CSI node plugin, driven over its
//! unix socket by a CSI client as the kubelet drives it (csi-sanity's node
//! cases are the model): plugin info and probe, publish of a local store
//! and of an `s3://` store on moto with secrets, publish and unpublish
//! twice, the refusals and their gRPC codes, no secret in any
//! `/proc/*/cmdline` or log, a plugin restart under a live mount, and the
//! daemon moved out of the plugin's cgroup. (Staging: tests/csi_stage.rs;
//! the plugin and client: tests/common/csi.rs.)
#![cfg(feature = "csi")]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::csi::*;
use nzfs::csi::proto;
use proto::identity_client::IdentityClient;
use proto::node_client::NodeClient;
use proto::volume_capability::{AccessType, access_mode::Mode};
use tonic::Code;

#[test]
fn identity_and_node_info() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    runtime().block_on(async {
        let ch = channel(&plugin.socket).await;
        let mut id = IdentityClient::new(ch.clone());
        let info = id
            .get_plugin_info(proto::GetPluginInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(info.name, "nzfs.csi.nzfs.dev");
        assert_eq!(info.vendor_version, env!("CARGO_PKG_VERSION"));
        let caps = id
            .get_plugin_capabilities(proto::GetPluginCapabilitiesRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(caps.capabilities.is_empty(), "no controller service: {caps:?}");
        assert_eq!(
            id.probe(proto::ProbeRequest {}).await.unwrap().into_inner().ready,
            Some(true)
        );
        let mut node = NodeClient::new(ch);
        let info = node
            .node_get_info(proto::NodeGetInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(info.node_id, "node-1");
        let caps = node
            .node_get_capabilities(proto::NodeGetCapabilitiesRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(caps.capabilities.len(), 1, "STAGE_UNSTAGE_VOLUME alone: {caps:?}");
        let e = node
            .node_stage_volume(proto::NodeStageVolumeRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "a stage of nothing: {e:?}");
    });
}

/// Publish a local store (the target created), twice; read it; unpublish
/// twice (the target removed). Then the refusals and their codes.
#[test]
fn publish_and_unpublish_a_local_store() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &["--log-dir", dir.path().to_str().unwrap()]);
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let store = store.to_str().unwrap();
    let target = dir.path().join("pods/uid-1/volumes/vol-1/mount");
    let _cleanup = Target(target.clone());
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        for _ in 0..2 {
            node.node_publish_volume(publish_request(store, &target, Mode::MultiNodeReaderOnly))
                .await
                .unwrap();
            assert!(nzfs::daemon::is_mount_point(&target));
        }
        assert_eq!(std::fs::read(target.join("t2m/data.bin")).unwrap(), expected_t2m());
        // Another store at a published target: ALREADY_EXISTS.
        let other = common::data_dir().join("hier.zarr").canonicalize().unwrap();
        let e = node
            .node_publish_volume(publish_request(
                other.to_str().unwrap(),
                &target,
                Mode::MultiNodeReaderOnly,
            ))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::AlreadyExists, "{e:?}");
        for _ in 0..2 {
            node.node_unpublish_volume(unpublish_request(&target)).await.unwrap();
            assert!(!nzfs::daemon::is_mount_point(&target));
            assert!(!target.exists(), "the target the plugin created is removed");
        }
        // The refusals, each with its code and a message that says why.
        let t2 = dir.path().join("pods/uid-2/mount");
        let mut cases: Vec<(proto::NodePublishVolumeRequest, Code, &str)> = Vec::new();
        let mut r = publish_request(store, &t2, Mode::MultiNodeReaderOnly);
        r.volume_context.remove("store");
        cases.push((r, Code::InvalidArgument, "store"));
        cases.push((
            publish_request(store, &t2, Mode::SingleNodeWriter),
            Code::FailedPrecondition,
            "read-only",
        ));
        cases.push((
            publish_request(store, Path::new(""), Mode::MultiNodeReaderOnly),
            Code::InvalidArgument,
            "target_path",
        ));
        cases.push((
            publish_request("/nonexistent/data.zarr", &t2, Mode::MultiNodeReaderOnly),
            Code::NotFound,
            "/nonexistent/data.zarr",
        ));
        let mut r = publish_request(store, &t2, Mode::MultiNodeReaderOnly);
        r.volume_context.insert("missing-chunks".into(), "sometimes".into());
        cases.push((r, Code::InvalidArgument, "missing-chunks"));
        let mut r = publish_request(store, &t2, Mode::MultiNodeReaderOnly);
        r.readonly = false;
        cases.push((r, Code::FailedPrecondition, "readonly"));
        for (req, code, needle) in cases {
            let e = node.node_publish_volume(req).await.unwrap_err();
            assert_eq!(e.code(), code, "{e:?}");
            assert!(e.message().contains(needle), "{e:?}");
            assert!(!nzfs::daemon::is_mount_point(&t2));
        }
        let e = node
            .node_unpublish_volume(proto::NodeUnpublishVolumeRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
    });
    assert!(plugin.log().contains("published"), "{}", plugin.log());
}

/// Killing the plugin leaves the mount up; a new plugin on the same socket
/// finds it and unpublishes it. With --mount-cgroup, the daemon leaves the
/// plugin's cgroup.
#[test]
fn mounts_survive_a_plugin_restart() {
    let dir = tempfile::tempdir().unwrap();
    // A cgroup v2 hierarchy this test may write (the unified one of a
    // hybrid host, or the root of a pure v2 host).
    let cgroup_root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("cgroup.procs").exists() && p.join("cgroup.controllers").exists());
    let cgroup = cgroup_root.map(|r| r.join(format!("nzfs-csi-test-{}", std::process::id())));
    let mut extra: Vec<String> = Vec::new();
    if let Some(c) = &cgroup {
        extra.extend(["--mount-cgroup".into(), c.display().to_string()]);
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut plugin = Plugin::start(dir.path(), &extra);
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let target = dir.path().join("mount");
    let _cleanup = Target(target.clone());
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        node.node_publish_volume(publish_request(
            store.to_str().unwrap(),
            &target,
            Mode::SingleNodeReaderOnly,
        ))
        .await
        .unwrap();
    });
    let pid = daemon_of(&target).expect("the mount's daemon");
    if let Some(c) = &cgroup {
        let name = c.file_name().unwrap().to_str().unwrap();
        let of = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        assert!(of.lines().any(|l| l.starts_with("0::") && l.ends_with(name)), "{of}");
    }
    plugin.kill();
    assert_eq!(std::fs::read(target.join("t2m/data.bin")).unwrap(), expected_t2m());
    let plugin = Plugin::start(dir.path(), &[]);
    assert!(plugin.log().contains("replaced a stale socket"), "{}", plugin.log());
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        node.node_unpublish_volume(unpublish_request(&target)).await.unwrap();
    });
    assert!(!nzfs::daemon::is_mount_point(&target));
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "the daemon did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(c) = &cgroup {
        std::fs::remove_dir(c).unwrap();
    }
}

/// An `s3://` store on moto, its credentials given as secrets: the data
/// reads, and the secret is in no process's command line and no log.
#[test]
fn publish_an_s3_store_with_secrets() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/csi", b""), 200);
    moto.upload("csi", &common::data_dir().join("sample.zarr"), "sample.zarr");
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &["--log-dir", dir.path().to_str().unwrap()]);
    let target = dir.path().join("mount");
    let _cleanup = Target(target.clone());
    let secret = format!("nzfs-csi-secret-{}", std::process::id());
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        let mut req = publish_request("s3://csi/sample.zarr", &target, Mode::MultiNodeReaderOnly);
        req.volume_context.insert(
            "store-option".into(),
            format!("aws_endpoint=http://127.0.0.1:{}\naws_region=us-east-1", moto.port),
        );
        req.secrets = HashMap::from([
            ("AWS_ACCESS_KEY_ID".to_string(), "test".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), secret.clone()),
        ]);
        node.node_publish_volume(req).await.unwrap();
        assert_eq!(std::fs::read(target.join("t2m/data.bin")).unwrap(), expected_t2m());
        // No secret in any command line, nor in the plugin's or daemon's log.
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
                assert!(
                    !String::from_utf8_lossy(&cmd).contains(&secret),
                    "the secret is in /proc/{}/cmdline",
                    e.file_name().to_string_lossy()
                );
            }
        }
        // A store that does not exist: NOT_FOUND.
        let mut req = publish_request(
            "s3://csi/nothing.zarr",
            &dir.path().join("m2"),
            Mode::MultiNodeReaderOnly,
        );
        req.volume_context.insert(
            "store-option".into(),
            format!("aws_endpoint=http://127.0.0.1:{} aws_region=us-east-1", moto.port),
        );
        req.secrets = HashMap::from([
            ("AWS_ACCESS_KEY_ID".to_string(), "test".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), secret.clone()),
        ]);
        let e = node.node_publish_volume(req).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "{e:?}");
        node.node_unpublish_volume(unpublish_request(&target)).await.unwrap();
    });
    let mut logs = plugin.log();
    for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if f.path().extension().is_some_and(|x| x == "log") {
            logs.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
        }
    }
    assert!(
        logs.contains("AWS_SECRET_ACCESS_KEY"),
        "the secret's name is logged: {logs}"
    );
    assert!(!logs.contains(&secret), "the secret is in a log");
}

/// A store URL with `user:password@`: the mount reads it, and the password
/// is in no command line, no log and no error the kubelet gets (a failing
/// publish of the same URL).
#[test]
fn credentials_in_a_store_url_are_shown_nowhere() {
    let Some(nginx) = common::servers::Nginx::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &["--log-dir", dir.path().to_str().unwrap()]);
    let target = dir.path().join("mount");
    let _cleanup = Target(target.clone());
    let password = format!("pw-{}-url", std::process::id());
    let url = format!("http://alice:{password}@127.0.0.1:{}/sample.zarr", nginx.port);
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        node.node_publish_volume(publish_request(&url, &target, Mode::MultiNodeReaderOnly))
            .await
            .unwrap();
        assert_eq!(std::fs::read(target.join("t2m/data.bin")).unwrap(), expected_t2m());
        assert!(
            !all_command_lines().contains(&password),
            "the password is in a command line"
        );
        let missing = format!("http://alice:{password}@127.0.0.1:{}/nothing.zarr", nginx.port);
        let e = node
            .node_publish_volume(publish_request(
                &missing,
                &dir.path().join("m2"),
                Mode::MultiNodeReaderOnly,
            ))
            .await
            .unwrap_err();
        assert!(!e.message().contains(&password), "the password is in the error: {e:?}");
        node.node_unpublish_volume(unpublish_request(&target)).await.unwrap();
    });
    let mut logs = plugin.log();
    for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if f.path().extension().is_some_and(|x| x == "log") {
            logs.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
        }
    }
    assert!(logs.contains("publishing"), "{logs}");
    assert!(!logs.contains(&password), "the password is in a log: {logs}");
}

/// What a Secret and a PersistentVolume's mountOptions may not carry is
/// refused over gRPC with INVALID_ARGUMENT, and nothing is mounted; so is
/// a target outside the target root or with `..`.
#[test]
fn secrets_and_mount_flags_outside_the_vocabulary_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    let store = common::data_dir().join("sample.zarr");
    let target = dir.path().join("mount");
    let _cleanup = Target(target.clone());
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        for (k, v) in [
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("GLIBC_TUNABLES", "x"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/etc/shadow"),
        ] {
            let mut req = publish_request(store.to_str().unwrap(), &target, Mode::MultiNodeReaderOnly);
            req.secrets = HashMap::from([(k.to_string(), v.to_string())]);
            let e = node.node_publish_volume(req).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{k}: {e:?}");
        }
        for flags in [
            "follow_symlinks",
            "uid=0,gid=0,umask=000",
            "allow_root,dev,suid",
            "log_file=/tmp/x",
        ] {
            let mut req = publish_request(store.to_str().unwrap(), &target, Mode::MultiNodeReaderOnly);
            if let Some(AccessType::Mount(m)) = &mut req.volume_capability.as_mut().unwrap().access_type {
                m.mount_flags = vec![flags.to_string()];
            }
            let e = node.node_publish_volume(req).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{flags}: {e:?}");
        }
        for t in ["/etc/nzfs-target".to_string(), format!("{}/../x", dir.path().display())] {
            let req = publish_request(store.to_str().unwrap(), Path::new(&t), Mode::MultiNodeReaderOnly);
            let e = node.node_publish_volume(req).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{t}: {e:?}");
        }
    });
    assert!(!nzfs::daemon::is_mount_point(&target));
}

/// Python's grpcio, which sends the socket's path as `:authority` (h2
/// alone answered every call with RST_STREAM): plugin info, probe and node
/// info, a publish whose data.bin equals zarr-python's read, refusals with
/// their code, and an unpublish.
#[test]
fn a_grpcio_client_is_served() {
    let Some(python) = grpcio_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    let target = dir.path().join("pods/p/mount");
    let _cleanup = Target(target.clone());
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let store = common::data_dir().join("sample.zarr");
    let run = |args: &[&std::ffi::OsStr]| grpcio(&python, &plugin.socket, args);
    run(&["publish".as_ref(), store.as_os_str(), target.as_os_str()]);
    assert!(nzfs::daemon::is_mount_point(&target));
    assert_eq!(std::fs::read(target.join("t2m/data.bin")).unwrap(), expected_t2m());
    run(&[
        "refuse".as_ref(),
        store.as_os_str(),
        dir.path().join("other").as_os_str(),
    ]);
    run(&["unpublish".as_ref(), target.as_os_str()]);
    assert!(!nzfs::daemon::is_mount_point(&target));
}

/// Unpublish undoes only what a publish of this plugin did: an nzfs mount
/// made by hand at a target below the root is refused (FAILED_PRECONDITION)
/// and stays up, an empty directory the plugin did not create stays, and a
/// publish into an existing directory leaves it on unpublish. The plugin
/// unmounted and removed all three.
#[test]
fn unpublish_undoes_only_what_the_plugin_did() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let store = store.to_str().unwrap();
    let by_hand = dir.path().join("pods/uid-1/mount");
    let _cleanup = Target(by_hand.clone());
    std::fs::create_dir_all(&by_hand).unwrap();
    let out = common::mount::nzfs(&["mount", store, by_hand.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let empty = dir.path().join("pods/uid-2/mount");
    std::fs::create_dir_all(&empty).unwrap();
    let existing = dir.path().join("pods/uid-3/mount");
    let _cleanup3 = Target(existing.clone());
    std::fs::create_dir_all(&existing).unwrap();
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        let e = node
            .node_unpublish_volume(unpublish_request(&by_hand))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains("did not make"), "{e:?}");
        assert!(
            nzfs::daemon::is_mount_point(&by_hand),
            "a mount the plugin did not make was unmounted"
        );
        node.node_unpublish_volume(unpublish_request(&empty)).await.unwrap();
        assert!(empty.is_dir(), "a directory the plugin did not create was removed");
        node.node_publish_volume(publish_request(store, &existing, Mode::MultiNodeReaderOnly))
            .await
            .unwrap();
        assert!(nzfs::daemon::is_mount_point(&existing));
        node.node_unpublish_volume(unpublish_request(&existing)).await.unwrap();
        assert!(!nzfs::daemon::is_mount_point(&existing));
        assert!(existing.is_dir(), "the directory was there before the publish");
    });
    let out = common::mount::nzfs(&["unmount", by_hand.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A mount of this volume's store with no record (published by a plugin
/// before records were kept) is refused by unpublish until the kubelet
/// publishes it again, which adopts it; then unpublish unmounts it.
#[test]
fn an_unrecorded_mount_of_the_same_volume_is_adopted_by_its_next_publish() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let store = store.to_str().unwrap();
    let target = dir.path().join("pods/uid-1/mount");
    let _cleanup = Target(target.clone());
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        node.node_publish_volume(publish_request(store, &target, Mode::MultiNodeReaderOnly))
            .await
            .unwrap();
        // As an earlier version left it: the mount, no record.
        for record in std::fs::read_dir(dir.path().join("published")).unwrap() {
            std::fs::remove_file(record.unwrap().path()).unwrap();
        }
        let e = node
            .node_unpublish_volume(unpublish_request(&target))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(nzfs::daemon::is_mount_point(&target));
        node.node_publish_volume(publish_request(store, &target, Mode::MultiNodeReaderOnly))
            .await
            .unwrap();
        node.node_unpublish_volume(unpublish_request(&target)).await.unwrap();
        assert!(!nzfs::daemon::is_mount_point(&target));
    });
}
