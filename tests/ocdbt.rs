//! OCDBT databases through a real mount: Orbax checkpoints as Orbax saves
//! them by default (scripts/fixtures_orbax.py: one checkpoint, and a
//! `CheckpointManager`'s three steps), local and in moto's S3 server, each
//! array's `data.bin` equal to what tensorstore reads of it through its
//! own ocdbt driver (`tests/data/orbax/expected/`), and `header.cdl`
//! naming each parameter's shape and type; a damaged database refused at
//! the mount, a damaged value `EIO` with one log line.
//! (Old code: `nzfs mount` refused every one, "not a Zarr store, but an
//! OCDBT key-value store …".)

mod common;

use std::path::Path;

use common::mount::Mount;
use nzfs::json::Value;

/// One array of expected.json.
struct Expected {
    store: String,
    path: String,
    stored: String,
    shape: Vec<u64>,
    bytes: Vec<u8>,
}

fn orbax() -> std::path::PathBuf {
    common::data_dir().join("orbax")
}

fn expected() -> Vec<Expected> {
    let text = std::fs::read(orbax().join("expected.json")).unwrap();
    let doc = nzfs::json::parse(&text).unwrap();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap().to_string();
    doc.as_array()
        .unwrap()
        .iter()
        .map(|e| Expected {
            store: s(e, "store"),
            path: s(e, "path"),
            stored: s(e, "stored"),
            shape: e
                .get("shape")
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect(),
            bytes: std::fs::read(orbax().join(s(e, "expected"))).unwrap(),
        })
        .collect()
}

/// Every array of `store` read through the mount at `mp` equals
/// tensorstore's read; its header names its shape and stored type; the
/// mount shows those arrays and no other.
fn reads_as_tensorstore(store: &str, mp: &Path) {
    let all = expected();
    let mine: Vec<&Expected> = all.iter().filter(|e| e.store == store).collect();
    assert!(mine.len() >= 4, "{store}: {} arrays expected", mine.len());
    for e in &mine {
        let dir = mp.join(&e.path);
        let got = std::fs::read(dir.join("data.bin")).unwrap_or_else(|err| panic!("{}: {err}", e.path));
        assert_eq!(got, e.bytes, "{store}/{}: data.bin", e.path);
        let header = std::fs::read_to_string(dir.join("header.cdl")).unwrap();
        let name = e.path.rsplit('/').next().unwrap();
        assert!(header.contains(name), "{}: {header}", e.path);
        for d in &e.shape {
            assert!(
                header.contains(&format!("= {d} ;")),
                "{}: shape {:?}: {header}",
                e.path,
                e.shape
            );
        }
        if e.stored == "bfloat16" {
            assert!(
                header.contains("bfloat16"),
                "{}: the stored type named: {header}",
                e.path
            );
        }
    }
    // One directory per parameter, in each database.
    let mut dbs: Vec<String> = mine
        .iter()
        .map(|e| e.path.rsplit_once('/').map_or("", |(d, _)| d).to_string())
        .collect();
    dbs.dedup();
    for db in dbs {
        let mut shown: Vec<String> = std::fs::read_dir(mp.join(&db))
            .unwrap()
            .map(|d| d.unwrap())
            .filter(|d| d.file_type().unwrap().is_dir())
            .map(|d| d.file_name().into_string().unwrap())
            .collect();
        shown.sort();
        let mut want: Vec<String> = mine
            .iter()
            .filter(|e| e.path.rsplit_once('/').map_or("", |(d, _)| d) == db)
            .map(|e| e.path.rsplit('/').next().unwrap().to_string())
            .collect();
        want.sort();
        assert_eq!(shown, want, "{store}/{db}");
    }
}

#[test]
fn an_orbax_checkpoint_mounts_one_directory_per_parameter() {
    let m = Mount::at(&orbax().join("checkpoint"), &[]);
    reads_as_tensorstore("checkpoint", &m.mp);
}

#[test]
fn a_checkpoint_manager_s_steps_mount_as_one_dataset() {
    let m = Mount::at(&orbax().join("steps"), &[]);
    for step in ["0", "1", "2"] {
        assert!(m.mp.join(step).join("default").is_dir(), "step {step}");
    }
    reads_as_tensorstore("steps", &m.mp);
}

/// The same databases in object storage: listed, then read by ranges.
#[cfg(feature = "remote")]
#[test]
fn orbax_steps_in_s3_read_as_local() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/ckpt", b""), 200);
    moto.upload("ckpt", &orbax().join("steps"), "run");
    let opts = common::servers::s3_options(moto.port, Some(("test", "test")));
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let m = Mount::at(Path::new("s3://ckpt/run/"), &opts);
    reads_as_tensorstore("steps", &m.mp);
}

/// A value whose data file was cut short is `EIO` on the files that
/// read it, with a log line naming the key and why, and the rest reads; a
/// B+tree node cut short refuses the mount in one line, naming the
/// database.
#[test]
fn a_damaged_database_refuses_the_mount_and_a_damaged_value_is_eio() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("ocdbt");
    common::copy_dir(&common::data_dir().join("ocdbt"), &copy);
    // The leaf (generation 3's root) holds the chunk inline; zarr.json is
    // out of line, in the other file: cut inside it, the array's
    // metadata no longer reads.
    let values = copy.join("d/e6a798559be3215d2974dc59168d2ac8");
    let bytes = std::fs::read(&values).unwrap();
    std::fs::write(&values, &bytes[..100]).unwrap();
    {
        let m = Mount::at(&copy, &[]);
        let e = std::fs::read_dir(m.mp.join("w")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
        let log = m.log_with("w/zarr.json");
        assert!(log.contains("w/zarr.json") && log.contains("past the end"), "{log}");
    }
    let mp = tmp.path().join("mp");
    std::fs::create_dir(&mp).unwrap();

    // The leaf itself cut short: refused, naming the database and node.
    common::copy_dir(&common::data_dir().join("ocdbt"), &tmp.path().join("leaf"));
    let leaf = tmp.path().join("leaf/d/02f49dd27cc3c97d16d554eb021417f6");
    let bytes = std::fs::read(&leaf).unwrap();
    std::fs::write(&leaf, &bytes[..bytes.len() - 10]).unwrap();
    let out = common::mount::nzfs(&["mount", tmp.path().join("leaf").to_str().unwrap(), mp.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("OCDBT database manifest.ocdbt"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    // A chunk out of line cut short: EIO on that array's data, one log line.
    let tmp2 = tempfile::tempdir().unwrap();
    let ck = tmp2.path().join("checkpoint");
    common::copy_dir(&orbax().join("checkpoint"), &ck);
    let m = Mount::at(&ck, &[]);
    // Cut every data file to its first 8 bytes once mounted (the B+tree
    // was read at the mount): the values out of line no longer read.
    let mut cut = 0;
    for dir in ["d", "ocdbt.process_0/d"] {
        for f in std::fs::read_dir(ck.join(dir)).unwrap() {
            let p = f.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            std::fs::write(&p, &b[..8.min(b.len())]).unwrap();
            cut += 1;
        }
    }
    assert!(cut > 0);
    let e = std::fs::read(m.mp.join("dense.kernel/data.bin")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    let log = m.log_with("dense.kernel/0.0");
    assert!(log.contains("dense.kernel/0.0"), "the log names the key: {log}");
    // The values inline in the leaves, read at the mount, still read.
    let bias = std::fs::read(m.mp.join("dense.bias/data.bin")).unwrap();
    assert_eq!(bias, vec![0u8; 16]);
}

/// A value out of line shows its data file's owner and mode: with the
/// checkpoint's data files readable by root alone, another user reads
/// neither that parameter's `data.bin` nor the checkpoint's `.nc` that
/// holds it, and still reads a parameter kept in the B+tree's leaves
/// (the manifests are world-readable); root reads all.
#[test]
fn an_out_of_line_value_is_as_private_as_its_data_file() {
    use std::os::unix::fs::PermissionsExt;
    let users = common::users::Users::create();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ck = tmp.path().join("checkpoint");
    common::copy_dir(&orbax().join("checkpoint"), &ck);
    for dir in ["d", "ocdbt.process_0/d"] {
        for f in std::fs::read_dir(ck.join(dir)).unwrap() {
            std::fs::set_permissions(f.unwrap().path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
    let m = Mount::at(&ck, &["-o", "allow_other"]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let all = expected();
    let want = |p: &str| {
        &all.iter()
            .find(|e| e.store == "checkpoint" && e.path == p)
            .unwrap()
            .bytes
    };
    for f in ["dense.kernel/data.bin", "checkpoint.nc"] {
        let got = common::users::cat_as(&users.other, &m.mp.join(f));
        assert!(
            matches!(&got, Err(e) if e.contains("Permission denied")),
            "{f}: {got:?}"
        );
    }
    let bias = common::users::cat_as(&users.other, &m.mp.join("dense.bias/data.bin")).unwrap();
    assert_eq!(&bias, want("dense.bias"));
    assert_eq!(
        &std::fs::read(m.mp.join("dense.kernel/data.bin")).unwrap(),
        want("dense.kernel")
    );
    drop(m);
    users.remove();
}
