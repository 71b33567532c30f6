//! A writable mount made with `--commit explicit` holds every new
//! `NAME.nc` closed through it, makes no commit until `nzfs commit`, then
//! makes one of them all; `nzfs status` lists what is held, and `nzfs
//! unmount` refuses while anything is, naming the files and what to do.
#![cfg(feature = "icechunk")]

mod common;

use std::process::Command;

use common::mount::{Mount, nzfs};
use common::repos::{REPO, refs};

const CDL: &str = "netcdf out {\ndimensions:\n\tx = 3 ;\nvariables:\n\tfloat v(x) ;\n\t\tv:units = \"K\" ;\n\
                   data:\n v = 1.5, 2.5, 3.5 ;\n}\n";

fn ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/setup.sh --test installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn held(m: &Mount) -> Vec<String> {
    let status = m.status();
    let held = status
        .get("writes")
        .and_then(|w| w.get("held"))
        .and_then(|h| h.as_array());
    held.unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect()
}

fn commits_made(m: &Mount) -> u64 {
    let status = m.status();
    status
        .get("writes")
        .and_then(|w| w.get("commits_made"))
        .and_then(|n| n.as_u64())
        .unwrap()
}

/// Old code: each file was its own commit at its close.
#[test]
fn three_files_under_commit_explicit_make_one_commit_at_nzfs_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    let spool = dir.path().join("spool");
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = Mount::at(
        &repo,
        &[
            "--writable",
            "--spool-dir",
            spool.to_str().unwrap(),
            "--commit",
            "explicit",
        ],
    );
    let before = refs(&repo);
    for (name, kind) in [("run_a", "classic"), ("run_b", "64-bit offset"), ("run_c", "nc4")] {
        ok(Command::new("ncgen")
            .args(["-k", kind, "-o"])
            .arg(m.mp.join(format!("{name}.nc")))
            .arg(&cdl));
        assert_eq!(refs(&repo), before, "{name}: no commit at its close");
        assert!(
            m.mp.join(format!("{name}.nc")).is_file(),
            "{name}.nc stays where it was written"
        );
    }
    assert_eq!(held(&m), ["run_a.nc", "run_b.nc", "run_c.nc"]);
    let text = String::from_utf8(nzfs(&["status", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("held for nzfs commit: 3 files"), "{text}");

    // The unmount refuses, and says what is held and what to do.
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(!out.status.success(), "an unmount with held files refuses");
    let said = String::from_utf8_lossy(&out.stderr);
    for needed in ["run_a.nc", "run_b.nc", "run_c.nc", "nzfs commit", "rm "] {
        assert!(said.contains(needed), "{needed:?} in {said}");
    }
    assert!(nzfs::daemon::is_mount_point(&m.mp), "still mounted");

    let made = commits_made(&m);
    let out = nzfs(&["commit", m.mp.to_str().unwrap(), "-m", "run 42"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("committed 3 files as snapshot"), "{said}");
    assert_ne!(refs(&repo), before, "the branch moved");
    assert_eq!(commits_made(&m), made + 1, "one commit for the three");
    for name in ["run_a", "run_b", "run_c"] {
        let dump = ok(Command::new("ncdump")
            .args(["-v", "v"])
            .arg(m.mp.join(name).join(format!("{name}.nc"))));
        assert!(dump.contains("v = 1.5, 2.5, 3.5 ;"), "{name}: {dump}");
        assert!(
            !m.mp.join(format!("{name}.nc")).exists(),
            "{name}.nc left the directory"
        );
    }
    let root = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    assert!(
        root.contains("run 42"),
        "the commit's message is the snapshot's: {root}"
    );
    assert!(held(&m).is_empty());
    let again = String::from_utf8(nzfs(&["commit", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(again.contains("nothing held"), "{again}");
}

/// A held file removed is dropped, never committed; `nzfs commit` on a
/// mount that commits at each close says so.
#[test]
fn a_held_file_removed_is_dropped_and_commit_needs_commit_explicit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let spool = dir.path().join("spool");
    let m = Mount::at(
        &repo,
        &[
            "--writable",
            "--spool-dir",
            spool.to_str().unwrap(),
            "-o",
            "commit=explicit",
        ],
    );
    let before = refs(&repo);
    ok(Command::new("ncgen")
        .args(["-k", "classic", "-o"])
        .arg(m.mp.join("gone.nc"))
        .arg(&cdl));
    std::fs::remove_file(m.mp.join("gone.nc")).unwrap();
    assert!(held(&m).is_empty());
    let said = String::from_utf8(nzfs(&["commit", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(said.contains("nothing held"), "{said}");
    assert_eq!(refs(&repo), before);
    drop(m);

    let spool = dir.path().join("spool2");
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let out = nzfs(&["commit", m.mp.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--commit explicit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
