//! A writable mount made with `--commit explicit` holds every new
//! `NAME.nc` closed through it and every write into an array's file,
//! makes no commit until `nzfs commit`, then makes one of them all (or
//! `nzfs discard` drops them); `nzfs status` lists what is held, and
//! `nzfs unmount` refuses while anything is, naming the files and what to
//! do.
#![cfg(feature = "icechunk")]

mod common;

use std::process::Command;

use common::mount::{Mount, nzfs};
use common::netcdf_tools::{ncdump, ok};
use common::repos::refs;

const CDL: &str = "netcdf out {\ndimensions:\n\tx = 3 ;\nvariables:\n\tfloat v(x) ;\n\t\tv:units = \"K\" ;\n\
                   data:\n v = 1.5, 2.5, 3.5 ;\n}\n";

fn held(m: &Mount) -> Vec<String> {
    let status = m.status();
    let held = status
        .get("writes")
        .and_then(|w| w.get("held"))
        .and_then(|h| h.as_array());
    held.unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect()
}

/// `ncgen -k classic -o nc cdl`.
fn classic(cdl: &std::path::Path, nc: &std::path::Path) {
    ok(Command::new("ncgen").args(["-k", "classic", "-o"]).arg(nc).arg(cdl));
}

/// `nzfs commit` of `m`, which must be refused.
fn commit_refused(m: &Mount) {
    let out = nzfs(&["commit", m.mp.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "refused: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn commits_made(m: &Mount) -> u64 {
    let status = m.status();
    status
        .get("writes")
        .and_then(|w| w.get("commits_made"))
        .and_then(|n| n.as_u64())
        .unwrap()
}

/// A writable mount of `repo` with `--commit explicit`.
fn explicit(repo: &std::path::Path, spool: &std::path::Path) -> Mount {
    Mount::at(
        repo,
        &[
            "--writable",
            "--spool-dir",
            spool.to_str().unwrap(),
            "--commit",
            "explicit",
        ],
    )
}

/// Old code: each file was its own commit at its close.
#[test]
fn three_files_under_commit_explicit_make_one_commit_at_nzfs_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = explicit(&repo, &spool);
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
    for needed in ["run_a.nc", "run_b.nc", "run_c.nc", "nzfs commit", "nzfs discard", "rm "] {
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
        let dump = ncdump(&["-v", "v"], &m.mp.join(name).join(format!("{name}.nc")));
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
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
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
    classic(&cdl, &m.mp.join("gone.nc"));
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

/// `nzfs commit` is all or nothing: a held file it cannot take (its
/// group made meanwhile by another writer's `mkdir`) refuses the commit,
/// the branch keeps the other's commit and every file stays held; and
/// while a `NAME.nc` is open for writing, nothing is committed. A `mkdir`
/// of the group a held file becomes is refused at once.
#[test]
fn nzfs_commit_is_all_or_nothing_and_waits_for_every_writer() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = explicit(&repo, &spool);
    for name in ["ok", "taken"] {
        classic(&cdl, &m.mp.join(format!("{name}.nc")));
    }
    // This mount refuses the name a held file's group needs (old code:
    // the mkdir committed, and the held file could never be)...
    let e = std::fs::create_dir(m.mp.join("taken")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
    // ...another writer takes it.
    let other = at_once(&repo, &dir.path().join("spool2"));
    std::fs::create_dir(other.mp.join("taken")).unwrap();
    drop(other);
    let before = refs(&repo);
    commit_refused(&m);
    assert_eq!(refs(&repo), before, "the branch keeps the other writer's commit");
    assert_eq!(held(&m), ["ok.nc", "taken.nc"], "both still held");

    // A file open for writing holds every commit back.
    std::fs::remove_file(m.mp.join("taken.nc")).unwrap();
    let mut open = std::fs::File::create(m.mp.join("later.nc")).unwrap();
    open.write_all(b"CDF").unwrap();
    let out = nzfs(&["commit", m.mp.to_str().unwrap()]);
    assert!(!out.status.success(), "refused while later.nc is open");
    assert_eq!(refs(&repo), before, "the branch did not move");
    std::fs::remove_file(m.mp.join("later.nc")).unwrap();
    drop(open);
    let out = nzfs(&["commit", m.mp.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("committed 1 file"), "{said}");
    assert!(m.mp.join("ok").is_dir() && held(&m).is_empty());
}

/// `nzfs discard` drops every held file, in the root and in a group,
/// naming each; the branch does not move and the unmount then goes
/// through. With nothing held it says so.
#[test]
fn nzfs_discard_drops_every_held_file_and_the_branch_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = explicit(&repo, &spool);
    let before = refs(&repo);
    // A mkdir is held too, and a file may go into its group.
    std::fs::create_dir(m.mp.join("runs")).unwrap();
    for path in ["a.nc", "runs/b.nc"] {
        classic(&cdl, &m.mp.join(path));
    }
    // A held file's fsync commits nothing either.
    let local = dir.path().join("c.nc");
    classic(&cdl, &local);
    {
        use std::io::Write;
        let mut f = std::fs::File::create(m.mp.join("c.nc")).unwrap();
        f.write_all(&std::fs::read(&local).unwrap()).unwrap();
        f.sync_all().unwrap();
        assert_eq!(refs(&repo), before, "the fsync of a held file commits nothing");
    }
    assert_eq!(held(&m), ["mkdir runs", "a.nc", "c.nc", "runs/b.nc"]);
    let out = nzfs(&["discard", m.mp.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    for dropped in ["dropped a.nc", "dropped runs/b.nc", "dropped mkdir runs"] {
        assert!(said.contains(dropped), "{dropped:?} in {said}");
    }
    assert!(held(&m).is_empty());
    assert_eq!(refs(&repo), before, "the branch did not move");
    assert!(!m.mp.join("a.nc").exists() && !m.mp.join("runs").exists());
    let again = String::from_utf8(nzfs(&["discard", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(again.contains("nothing held"), "{again}");
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Writes into an array's file are held too: its close and `fsync`
/// commit nothing, it reads as written, `nzfs status` lists it, and `nzfs
/// commit` makes it and a new file one commit, which a new mount reads;
/// a second write discarded by `nzfs discard` leaves what was committed.
/// (Old code: the close committed the write at once.)
#[test]
fn writes_into_an_array_are_held_until_nzfs_commit_or_discard() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = explicit(&repo, &spool);
    let data = m.mp.join("temp/data.bin");
    // Read first, so that the decoded chunks are cached.
    let original = std::fs::read(&data).unwrap();
    let before = refs(&repo);
    let row: Vec<u8> = (0..24u8).collect();
    let write = |bytes: &[u8]| {
        let f = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
        f.write_all_at(bytes, 24).unwrap();
        f.sync_all().unwrap();
    };
    write(&row);
    assert_eq!(refs(&repo), before, "the close and fsync commit nothing");
    let mut edited = original.clone();
    edited[24..48].copy_from_slice(&row);
    assert_eq!(std::fs::read(&data).unwrap(), edited, "it reads as written");
    classic(&cdl, &m.mp.join("a.nc"));
    assert_eq!(held(&m), ["a.nc", "temp/data.bin"]);
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("temp/data.bin"),
        "the unmount refuses, naming it"
    );

    let made = commits_made(&m);
    let out = nzfs(&["commit", m.mp.to_str().unwrap(), "-m", "run 43"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("a.nc") && said.contains("temp/data.bin"), "{said}");
    assert_eq!(commits_made(&m), made + 1, "one commit");
    assert!(held(&m).is_empty());
    assert_eq!(std::fs::read(&data).unwrap(), edited, "the commit reads as written");
    assert!(m.mp.join("a").is_dir());
    let fresh = Mount::at(&repo, &[]);
    assert_eq!(
        std::fs::read(fresh.mp.join("temp/data.bin")).unwrap(),
        edited,
        "a new mount reads it"
    );
    drop(fresh);

    // Written again, then discarded: the committed bytes stay.
    let after = refs(&repo);
    write(&[0xff; 24]);
    assert_eq!(held(&m), ["temp/data.bin"]);
    let out = nzfs(&["discard", m.mp.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("dropped temp/data.bin"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(held(&m).is_empty());
    assert_eq!(refs(&repo), after, "the branch did not move");
    assert_eq!(
        std::fs::read(&data).unwrap(),
        edited,
        "the discarded bytes no longer show"
    );
}

/// A held write is checked at the branch's tip when `nzfs commit` makes
/// it: another writer that changed the same chunk meanwhile (a second
/// mount) makes the commit refused, the branch keeps the other's write,
/// and everything stays held.
#[test]
fn a_held_write_into_a_chunk_changed_meanwhile_refuses_the_commit() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let m = explicit(&repo, &spool);
    let write = |mp: &std::path::Path, byte: u8| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(mp.join("temp/data.bin"))
            .unwrap();
        f.write_all_at(&[byte; 24], 24).unwrap();
    };
    write(&m.mp, 1);
    classic(&cdl, &m.mp.join("a.nc"));
    let before = refs(&repo);
    let other = at_once(&repo, &dir.path().join("spool2"));
    write(&other.mp, 2);
    let theirs = refs(&repo);
    assert_ne!(theirs, before, "the other mount committed its write");
    drop(other);
    commit_refused(&m);
    assert_eq!(refs(&repo), theirs, "the branch keeps the other writer's commit");
    assert_eq!(held(&m), ["a.nc", "temp/data.bin"], "everything stays held");
}

/// A writable mount that commits at each close, for another writer or to
/// set a repository up.
fn at_once(repo: &std::path::Path, spool: &std::path::Path) -> Mount {
    Mount::at(repo, &["--writable", "--spool-dir", spool.to_str().unwrap()])
}

/// The names in directory `dir` of the mount, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `mkdir` and `rm -r` are held as files are: a new group (with a file
/// and a group made in it) and the removal of a group and of an array
/// show at once and commit nothing until `nzfs commit`, which makes them
/// and the files one commit; a new mount reads the result. (Old code:
/// each `mkdir` and each `rmdir` of `rm -r` was a commit of its own.)
#[test]
fn mkdir_and_rm_r_are_held_until_nzfs_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    // A group with an array in it, to remove.
    {
        let setup = at_once(&repo, &dir.path().join("spool0"));
        classic(&cdl, &setup.mp.join("old.nc"));
        assert!(setup.mp.join("old/v").is_dir());
    }
    let m = explicit(&repo, &spool);
    let before = refs(&repo);
    std::fs::create_dir(m.mp.join("run1")).unwrap();
    std::fs::create_dir(m.mp.join("run1/inner")).unwrap();
    ok(Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(m.mp.join("run1/out.nc"))
        .arg(&cdl));
    ok(Command::new("rm").arg("-r").arg(m.mp.join("old")));
    ok(Command::new("rm").arg("-r").arg(m.mp.join("humidity")));
    assert_eq!(refs(&repo), before, "nothing committed");
    assert_eq!(commits_made(&m), 0);
    assert_eq!(
        held(&m),
        [
            "rmdir old/v",
            "rmdir old",
            "rmdir humidity",
            "mkdir run1",
            "mkdir run1/inner",
            "run1/out.nc"
        ]
    );
    // The mount shows what is held.
    let root = names(&m.mp);
    assert!(root.contains(&"run1".to_string()), "{root:?}");
    assert!(
        !root.contains(&"old".to_string()) && !root.contains(&"humidity".to_string()),
        "{root:?}"
    );
    assert!(!m.mp.join("old").exists() && !m.mp.join("humidity/data.bin").exists());
    assert_eq!(names(&m.mp.join("run1")), ["inner", "out.nc"]);
    assert!(names(&m.mp.join("run1/inner")).is_empty());
    let text = String::from_utf8(nzfs(&["status", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.contains("held for nzfs commit: 1 file and 5 directory changes"),
        "{text}"
    );
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {said}");
    for needed in ["mkdir run1", "rmdir old", "rmdir humidity", "run1/out.nc"] {
        assert!(said.contains(needed), "{needed:?} in {said}");
    }

    let out = nzfs(&["commit", m.mp.to_str().unwrap(), "-m", "run 1"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("committed 1 file and 5 directory changes as snapshot"),
        "{said}"
    );
    assert_eq!(commits_made(&m), 1, "one commit for all");
    assert!(held(&m).is_empty());
    let check = |mp: &std::path::Path| {
        assert!(mp.join("run1/inner").is_dir(), "run1/inner is a group");
        let dump = ncdump(&["-v", "v"], &mp.join("run1/out/out.nc"));
        assert!(dump.contains("v = 1.5, 2.5, 3.5 ;"), "{dump}");
        let root = names(mp);
        assert!(
            !root.contains(&"old".to_string()) && !root.contains(&"humidity".to_string()),
            "{root:?}"
        );
        assert!(root.contains(&"temp".to_string()), "the rest stays: {root:?}");
    };
    check(&m.mp);
    drop(m);
    let again = at_once(&repo, &dir.path().join("spool3"));
    check(&again.mp);
}

/// A held `rm -r` is checked at the branch's tip when `nzfs commit`
/// makes it: a node another writer put below the removed group
/// meanwhile refuses the commit (nothing of theirs is deleted), and so
/// does a group another writer made where a held `mkdir` makes one;
/// everything stays held, and `nzfs discard` then shows the branch as it
/// is.
#[test]
fn a_held_rm_r_of_a_group_another_writer_filled_refuses_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    {
        let setup = at_once(&repo, &dir.path().join("spool0"));
        std::fs::create_dir(setup.mp.join("runs")).unwrap();
    }
    let m = explicit(&repo, &spool);
    ok(Command::new("rm").arg("-r").arg(m.mp.join("runs")));
    assert_eq!(held(&m), ["rmdir runs"]);
    let other = at_once(&repo, &dir.path().join("spool2"));
    classic(&cdl, &other.mp.join("runs/theirs.nc"));
    drop(other);
    let theirs = refs(&repo);
    commit_refused(&m);
    assert_eq!(refs(&repo), theirs, "the branch keeps the other writer's group");
    let log = m.log_with("runs/theirs");
    assert!(log.contains("runs/theirs"), "the log names what is below it: {log}");
    assert_eq!(held(&m), ["rmdir runs"], "still held");

    // A mkdir held where another writer then makes the same group.
    std::fs::create_dir(m.mp.join("mine")).unwrap();
    let other = at_once(&repo, &dir.path().join("spool4"));
    std::fs::create_dir(other.mp.join("mine")).unwrap();
    drop(other);
    let theirs = refs(&repo);
    commit_refused(&m);
    assert_eq!(refs(&repo), theirs);
    assert_eq!(held(&m), ["rmdir runs", "mkdir mine"]);

    let out = nzfs(&["discard", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(held(&m).is_empty());
    assert_eq!(refs(&repo), theirs, "the branch did not move");
    // The mount looks at the branch: both groups as the others left them.
    assert!(m.mp.join("runs/theirs").is_dir(), "{:?}", names(&m.mp.join("runs")));
    assert!(m.mp.join("mine").is_dir());
}
