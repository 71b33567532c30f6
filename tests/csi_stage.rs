//! Stage once, publish many (`nzfs csi` with STAGE_UNSTAGE_VOLUME): a
//! volume staged once per node and bound into pods' targets, driven by
//! our CSI client and by Python's grpcio, local and on moto's S3.
#![cfg(feature = "csi")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::csi::*;
use nzfs::csi::proto;
use proto::node_client::NodeClient;
use tonic::Code;

/// `req` with the volume's Secret holding access key `key`.
fn with_key(mut req: proto::NodeStageVolumeRequest, key: &str) -> proto::NodeStageVolumeRequest {
    req.secrets.insert("AWS_ACCESS_KEY_ID".into(), key.into());
    req
}

/// Stage once, publish many: one daemon at the staging path, two pods'
/// targets binding it read-only, each reading what zarr-python reads, each
/// chunk decoded once for both; an unpublish leaves the other pod reading,
/// a plugin restart is survived, unstage refuses while a pod holds the
/// volume and then leaves no mount and no daemon. A second volume (its
/// own Secret) is a second daemon, each holding its own credentials. A staged mount whose daemon died is UNAVAILABLE to the
/// next publish. (Old code: NodeStageVolume was UNIMPLEMENTED, and each
/// publish started a daemon of its own.)
#[test]
fn a_volume_staged_once_is_published_to_two_pods_by_one_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let mut plugin = Plugin::start(dir.path(), &[]);
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let store = store.to_str().unwrap();
    let staging = dir.path().join("plugins/kubernetes.io/csi/nzfs/h1/globalmount");
    let (a, b) = (dir.path().join("pods/a/mount"), dir.path().join("pods/b/mount"));
    let _cleanup = [Target(a.clone()), Target(b.clone()), Target(staging.clone())];
    std::fs::create_dir_all(staging.parent().unwrap()).unwrap();
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        let caps = node
            .node_get_capabilities(proto::NodeGetCapabilitiesRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(format!("{caps:?}").contains("StageUnstageVolume"), "{caps:?}");
        // Publishing a volume not staged says what to do first.
        let e = node
            .node_publish_volume(bind_request(store, &staging, &a))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains("NodeStageVolume first"), "{e:?}");
        for _ in 0..2 {
            node.node_stage_volume(with_key(stage_request(store, &staging, "vol-1"), "key-one"))
                .await
                .unwrap();
        }
        assert!(nzfs::daemon::is_mount_point(&staging));
        for t in [&a, &b, &a] {
            node.node_publish_volume(bind_request(store, &staging, t))
                .await
                .unwrap();
        }
    });
    assert_eq!(daemons(dir.path()), 1, "one daemon for both pods");
    assert!(daemon_of(&staging).is_some() && daemon_of(&a).is_none() && daemon_of(&b).is_none());
    assert_eq!(std::fs::read(a.join("t2m/data.bin")).unwrap(), expected_t2m());
    let once = decodes(&staging);
    assert!(once > 0);
    assert_eq!(std::fs::read(b.join("t2m/data.bin")).unwrap(), expected_t2m());
    assert_eq!(decodes(&staging), once, "the second pod's read decoded nothing again");
    // Read-only, nosuid, nodev in each pod.
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info.lines().find(|l| l.split(' ').nth(4) == a.to_str()).unwrap();
    let opts = line.split(' ').nth(5).unwrap();
    for o in ["ro", "nosuid", "nodev"] {
        assert!(opts.split(',').any(|x| x == o), "{o} in {line}");
    }
    assert!(std::fs::write(a.join("x"), b"x").is_err());

    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        let e = node
            .node_unstage_volume(proto::NodeUnstageVolumeRequest {
                volume_id: "vol-1".into(),
                staging_target_path: staging.to_string_lossy().into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains("still published"), "{e:?}");
        node.node_unpublish_volume(unpublish_request(&a)).await.unwrap();
    });
    assert!(!nzfs::daemon::is_mount_point(&a) && !a.exists());
    assert_eq!(std::fs::read(b.join("t2m/data.bin")).unwrap(), expected_t2m());

    // A restart between publish and unpublish.
    plugin.kill();
    let plugin = Plugin::start(dir.path(), &[]);
    let pid = daemon_of(&staging).unwrap();
    runtime().block_on(async {
        let mut node = NodeClient::new(channel(&plugin.socket).await);
        node.node_unpublish_volume(unpublish_request(&b)).await.unwrap();
        // A second volume: a second staging, a second daemon.
        let staging2 = dir.path().join("plugins/kubernetes.io/csi/nzfs/h2/globalmount");
        let _c = Target(staging2.clone());
        node.node_stage_volume(with_key(stage_request(store, &staging2, "vol-2"), "key-two"))
            .await
            .unwrap();
        let other = daemon_of(&staging2).unwrap();
        assert_ne!(other, pid, "another volume, another daemon");
        // Each daemon holds its own volume's credentials, not the other's.
        let environ = |pid: i32| std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let holds = |pid: i32, key: &str| {
            environ(pid)
                .split(|&b| b == 0)
                .any(|v| v == format!("AWS_ACCESS_KEY_ID={key}").as_bytes())
        };
        assert!(holds(pid, "key-one") && !holds(pid, "key-two"));
        assert!(holds(other, "key-two") && !holds(other, "key-one"));
        // Its daemon killed: the next publish is told, and retries.
        let _ = Command::new("kill").args(["-9", &other.to_string()]).status();
        let start = Instant::now();
        while Path::new(&format!("/proc/{other}")).exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let c = dir.path().join("pods/c/mount");
        let _cc = Target(c.clone());
        let mut req = bind_request(store, &staging2, &c);
        req.volume_id = "vol-2".into();
        let e = node.node_publish_volume(req).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert!(
            !nzfs::daemon::is_mount_point(&c) && !c.exists(),
            "no empty directory bound"
        );
        for (vol, s) in [("vol-1", &staging), ("vol-2", &staging2)] {
            node.node_unstage_volume(proto::NodeUnstageVolumeRequest {
                volume_id: vol.into(),
                staging_target_path: s.to_string_lossy().into(),
            })
            .await
            .unwrap();
            assert!(!nzfs::daemon::is_mount_point(s) && !nzfs::daemon::is_stale(s), "{vol}");
        }
    });
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the staged daemon did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(daemons(dir.path()), 0);
}

/// The same through Python's grpcio, the client CI runs beside our own:
/// a volume staged once and bound into two pods' targets, every array read
/// through both equal to zarr-python's, one daemon, each chunk decoded
/// once; one pod unpublished, the other still reads; unstaged, no mount
/// and no daemon. Then a volume in moto's S3 server (its credentials as
/// secrets), where the store sees each chunk object asked for once for
/// both pods.
#[test]
fn a_grpcio_client_stages_once_for_two_pods() {
    let Some(python) = grpcio_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let plugin = Plugin::start(dir.path(), &[]);
    let run = |args: &[&str]| grpcio(&python, &plugin.socket, args);
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let expected = common::manifest();
    let sample: Vec<_> = expected.iter().filter(|e| e.store == "sample.zarr").collect();
    assert!(sample.len() >= 2);
    // Every sample array through a pod's mount equals zarr-python's.
    let reads_sample = |mp: &Path| {
        for e in &sample {
            assert_eq!(
                std::fs::read(mp.join(&e.path).join("data.bin")).unwrap(),
                e.bytes,
                "{}",
                e.path
            );
        }
    };
    let check = |volume: &str, store: &str, staging: &Path, extra: &[String]| {
        let (a, b) = (
            dir.path().join(format!("pods/{volume}-a/mount")),
            dir.path().join(format!("pods/{volume}-b/mount")),
        );
        let _cleanup = [Target(a.clone()), Target(b.clone()), Target(staging.to_path_buf())];
        std::fs::create_dir_all(staging.parent().unwrap()).unwrap();
        let mut stage = vec!["stage".to_string(), volume.into(), store.into(), p(staging)];
        stage.extend(extra.iter().cloned());
        run(&stage.iter().map(String::as_str).collect::<Vec<_>>());
        for t in [&a, &b] {
            run(&["bind", volume, store, &p(staging), &p(t)]);
        }
        assert_eq!(daemons(dir.path()), 1, "one daemon for both pods");
        assert!(daemon_of(&a).is_none() && daemon_of(&b).is_none());
        reads_sample(&a);
        let once = decodes(staging);
        reads_sample(&b);
        assert_eq!(decodes(staging), once, "each chunk decoded once for both pods");
        run(&["unbind", volume, &p(&a)]);
        assert!(!nzfs::daemon::is_mount_point(&a));
        reads_sample(&b);
        run(&["unbind", volume, &p(&b)]);
        run(&["unstage", volume, &p(staging)]);
        assert!(!nzfs::daemon::is_mount_point(staging));
        let start = Instant::now();
        while daemons(dir.path()) > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the staged daemon did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let store = common::data_dir().join("sample.zarr").canonicalize().unwrap();
    let local = dir.path().join("plugins/kubernetes.io/csi/nzfs/l/globalmount");
    check("local", store.to_str().unwrap(), &local, &[]);

    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/vols", b""), 200);
    moto.upload("vols", &store, "sample.zarr");
    let proxy = common::servers::Proxy::start(moto.port);
    let s3 = dir.path().join("plugins/kubernetes.io/csi/nzfs/s/globalmount");
    let extra = [
        format!("store-option=aws_endpoint=http://127.0.0.1:{}", proxy.port),
        "store-option=aws_region=us-east-1".to_string(),
        "secret:AWS_ACCESS_KEY_ID=test".to_string(),
        "secret:AWS_SECRET_ACCESS_KEY=test".to_string(),
    ];
    check("s3", "s3://vols/sample.zarr", &s3, &extra);
    let gets: Vec<String> = proxy
        .request_log()
        .into_iter()
        .filter(|r| r.starts_with("GET") && r.contains("/c/"))
        .collect();
    let mut unique = gets.clone();
    unique.sort();
    unique.dedup();
    assert!(!gets.is_empty());
    assert_eq!(gets.len(), unique.len(), "each chunk object asked for once: {gets:?}");
}
