use std::io::Read;
use std::sync::Arc;

use super::*;

/// The bit the tests' spools number their files with.
const INOS: u64 = 1 << 54;

/// A target that records each commit's group, message and bytes, and
/// fails when told to.
#[derive(Default)]
struct Recorder {
    commits: Mutex<Vec<(String, String, Vec<u8>)>>,
    fail: std::sync::atomic::AtomicBool,
}

impl Target for Arc<Recorder> {
    fn commit(
        &self,
        (parent, name): (&str, &str),
        file: &File,
        message: &str,
        _replace: Option<&[String]>,
    ) -> Result<(String, Vec<String>), WriteError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(WriteError::Exists(format!("{parent}/{name}")));
        }
        let mut bytes = Vec::new();
        (&*file).read_to_end(&mut bytes).unwrap();
        lock(&self.commits).push((crate::write::node_path(parent, name), message.to_string(), bytes));
        Ok(("SNAPSHOT".into(), Vec::new()))
    }

    fn change(
        &self,
        message: &str,
        _change: &mut dyn FnMut(&dyn crate::write::Stage) -> Result<(), WriteError>,
    ) -> Result<crate::write::Landed, WriteError> {
        lock(&self.commits).push((String::new(), message.to_string(), Vec::new()));
        Ok(crate::write::Landed {
            snapshot: "SNAPSHOT".into(),
            parent: "PARENT".into(),
        })
    }
}

fn spool(limit: u64) -> (tempfile::TempDir, Spool, Arc<Recorder>) {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let (s, left) = Spool::open(&dir.path().join("spool"), limit, INOS, Box::new(Arc::clone(&rec))).unwrap();
    assert!(left.is_empty());
    (dir, s, rec)
}

#[test]
fn a_written_file_is_one_commit_at_its_close_and_then_leaves_the_spool() {
    let (dir, s, rec) = spool(1 << 20);
    let st = s
        .create(1, "derived", "mean.nc", (1000, 100, 0o644), "cdo (pid 7)".into())
        .unwrap();
    assert!(s.owns(st.ino) && !s.owns(5) && !s.owns(1 << 55 | 3));
    assert_eq!(s.write(st.ino, 4, b"world").unwrap(), 5);
    s.write(st.ino, 0, b"CDF\x01").unwrap();
    assert_eq!(s.read(st.ino, 0, 100).unwrap(), b"CDF\x01world");
    assert_eq!(s.read(st.ino, 6, 2).unwrap(), b"rl");
    assert_eq!(s.lookup(1, "mean.nc").unwrap().size, 9);
    assert!(s.lookup(2, "mean.nc").is_none());
    assert_eq!(s.list(1).len(), 1);
    assert_eq!(s.truncate(st.ino, 4).unwrap().size, 4);
    assert_eq!(s.close(st.ino).unwrap().as_deref(), Some("SNAPSHOT"));
    let commits = lock(&rec.commits);
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].0, "derived/mean.nc");
    assert_eq!(commits[0].1, "derived/mean.nc written through nzfs by cdo (pid 7)");
    assert_eq!(commits[0].2, b"CDF\x01");
    drop(commits);
    // Gone from the mount and from the disk; a second close commits nothing.
    assert!(s.lookup(1, "mean.nc").is_none());
    assert_eq!(s.close(st.ino).unwrap(), None);
    assert_eq!(std::fs::read_dir(dir.path().join("spool")).unwrap().count(), 0);
}

#[test]
fn the_limit_refuses_a_write_and_a_failed_commit_keeps_the_bytes() {
    let (_dir, s, rec) = spool(10);
    let a = s.create(1, "", "a.nc", (0, 0, 0o644), "w".into()).unwrap().ino;
    let b = s.create(1, "", "b.nc", (0, 0, 0o644), "w".into()).unwrap().ino;
    s.write(a, 0, b"123456").unwrap();
    let e = s.write(b, 0, b"12345").unwrap_err();
    assert!(
        matches!(
            e,
            SpoolError::Full {
                limit: 10,
                wanted: 11,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(s.truncate(b, 5), Err(SpoolError::Full { .. })));
    s.write(b, 0, b"1234").unwrap();
    rec.fail.store(true, Ordering::Relaxed);
    assert!(matches!(s.close(a), Err(SpoolError::Commit(_))));
    // Still there until released, then its bytes are left for the user.
    assert_eq!(s.stat(a).unwrap().size, 6);
    let kept = s.release(a, true).1.unwrap();
    assert_eq!(std::fs::read(&kept).unwrap(), b"123456");
    assert!(matches!(s.stat(a), Err(SpoolError::NotFound)));
    // Kept, it still counts against the limit, and is listed with why.
    let listed = s.kept();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].path, kept);
    assert!(listed[0].why.contains("its commit failed"), "{}", listed[0].why);
    assert!(matches!(s.write(b, 4, b"x"), Err(SpoolError::Full { kept: 6, .. })));
    // Removed by its user, it no longer does.
    std::fs::remove_file(&kept).unwrap();
    s.write(b, 4, b"x").unwrap();
    assert!(s.kept().is_empty());
    // A writer that gives up removes its file.
    s.remove(1, "b.nc").unwrap();
    assert!(matches!(s.remove(1, "b.nc"), Err(SpoolError::NotFound)));
}

#[test]
fn a_spool_others_may_enter_is_refused_and_leftovers_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rec = Arc::new(Recorder::default());
    let e = Spool::open(&open, 1, INOS, Box::new(Arc::clone(&rec))).err().unwrap();
    assert!(
        e.to_string().contains("mode 0700") && e.to_string().contains("--spool-dir"),
        "{e}"
    );
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    assert!(Spool::open(&link, 1, INOS, Box::new(Arc::clone(&rec))).is_err());
    let ok = dir.path().join("ok");
    std::fs::DirBuilder::new().mode(0o700).create(&ok).unwrap();
    std::fs::write(ok.join("3-left.nc"), b"x").unwrap();
    let (_, left) = Spool::open(&ok, 1, INOS, Box::new(rec)).unwrap();
    assert_eq!(left, [ok.join("3-left.nc")]);
}

#[test]
fn a_temporary_name_waits_for_its_rename_to_name_nc() {
    let (_dir, s, rec) = spool(1 << 20);
    let ino = s
        .create(1, "", "out.nc.pid9.ncks.tmp", (0, 0, 0o644), "ncks".into())
        .unwrap()
        .ino;
    s.write(ino, 0, b"CDF\x02").unwrap();
    assert_eq!(s.close(ino).unwrap(), None, "not NAME.nc: nothing committed");
    assert!(lock(&rec.commits).is_empty());
    s.rename(ino, 2, "derived", "out.nc").unwrap();
    assert!(s.lookup(1, "out.nc.pid9.ncks.tmp").is_none());
    assert_eq!(s.lookup(2, "out.nc").unwrap().size, 4);
    assert_eq!(s.close(ino).unwrap().as_deref(), Some("SNAPSHOT"));
    assert_eq!(lock(&rec.commits)[0].0, "derived/out.nc");
}

/// Writes into an array's file: merged extents, reads that show them, the
/// size kept, the limit shared with new files, and a commit that clears
/// only what it carried.
#[test]
fn an_edit_keeps_its_size_shows_its_writes_and_counts_against_the_limit() {
    let (dir, s, _rec) = spool(64);
    let base: Base = Arc::new(NoVersion(crate::store::MemoryStore::default()));
    s.edit_open(
        9,
        (3, "t2m", "t2m/data.bin"),
        Shown::Data,
        40,
        "dd (pid 1)".into(),
        Arc::clone(&base),
    )
    .unwrap();
    assert!(s.is_edited(9) && !s.is_edited(8));
    s.edit_write(9, 10, b"abcd").unwrap();
    s.edit_write(9, 14, b"ef").unwrap();
    s.edit_write(9, 2, b"Z").unwrap();
    // Past the end: refused, and nothing of it kept.
    assert!(matches!(
        s.edit_write(9, 38, b"xyz"),
        Err(SpoolError::Size { size: 40, wanted: 41 })
    ));
    let buf = s.edit_overlay(9, 0, &[b'.'; 20]).unwrap().unwrap();
    assert_eq!(&buf, b"..Z.......abcdef....");
    // A read of what nobody wrote is the store's bytes as they are.
    assert!(s.edit_overlay(9, 16, &[b'.'; 20]).unwrap().is_none());
    let p = s.edit_pending(9).unwrap().unwrap();
    assert_eq!(p.extents, [(2, 3), (10, 16)], "touching writes merge");
    assert_eq!((p.node, p.array.as_str(), p.shown), (3, "t2m", Shown::Data));
    // The limit is shared: a new file may take what the edit leaves.
    let ino = s.create(1, "", "a.nc", (0, 0, 0o644), "x".into()).unwrap().ino;
    assert!(matches!(s.write(ino, 0, &[0; 58]), Err(SpoolError::Full { .. })));
    s.write(ino, 0, &[0; 57]).unwrap();
    assert!(matches!(s.edit_write(9, 20, b"q"), Err(SpoolError::Full { .. })));
    // A commit taken while nothing more was written clears the edit.
    s.edit_done(9, &p, Some(Arc::clone(&base)));
    assert!(s.edit_pending(9).unwrap().is_none());
    // A failed commit's bytes are kept in the spool, and leave the edit: a
    // later open of the file starts afresh.
    s.edit_open(
        9,
        (3, "t2m", "t2m/data.bin"),
        Shown::Data,
        40,
        "dd".into(),
        Arc::clone(&base),
    )
    .unwrap();
    s.edit_write(9, 0, b"k").unwrap();
    let p = s.edit_pending(9).unwrap().unwrap();
    let kept = s.edit_done(9, &p, None).expect("kept");
    assert!(kept.starts_with(dir.path()) && std::fs::read(&kept).unwrap() == b"k");
    assert!(s.edit_pending(9).unwrap().is_none());
    s.edit_release(9);
    assert!(s.is_edited(9), "one open is left");
    s.edit_release(9);
    assert!(!s.is_edited(9) && kept.exists());
}

#[test]
fn a_second_daemon_is_refused_the_spool_the_first_holds() {
    let (dir, s, _rec) = spool(1 << 20);
    let again = Spool::open(
        &dir.path().join("spool"),
        1 << 20,
        INOS,
        Box::new(Arc::new(Recorder::default())),
    );
    let e = again.err().expect("refused");
    assert!(e.to_string().contains("another nzfs daemon uses it"), "{e}");
    drop(s);
    Spool::open(
        &dir.path().join("spool"),
        1 << 20,
        INOS,
        Box::new(Arc::new(Recorder::default())),
    )
    .unwrap();
}

/// A version with no arrays, for edits that are never committed.
struct NoVersion(crate::store::MemoryStore);

impl Version for NoVersion {
    fn array(&self, _: usize) -> Option<&crate::array::Array> {
        None
    }

    fn store(&self) -> &dyn crate::store::ReadableStore {
        &self.0
    }

    fn cache_budget(&self) -> u64 {
        0
    }
}

#[test]
fn a_held_removal_hides_its_node_and_what_is_below_only() {
    let (_d, s, _) = spool(1 << 20);
    s.hold_removal(1, "runs/a");
    assert!(s.is_removed("runs/a") && s.is_removed("runs/a/b/c"));
    assert!(!s.is_removed("runs/ab") && !s.is_removed("runs") && !s.is_removed("runs/b"));
    let group = s.make_dir(1, "runs", "new", (0, 0, 0o755));
    assert!(group.dir && s.owns(group.ino));
    assert_eq!(s.dir_path(group.ino).as_deref(), Some("runs/new"));
    assert_eq!(s.held(), ["rmdir runs/a", "mkdir runs/new"]);
    // A held group with a file staged in it is not dropped by its rmdir.
    s.create(group.ino, "runs/new", "x.nc", (0, 0, 0o644), "test".into())
        .unwrap();
    assert!(matches!(s.remove_dir(1, "new"), Err(SpoolError::NotEmpty(_))));
    s.remove(group.ino, "x.nc").unwrap();
    s.remove_dir(1, "new").unwrap();
    assert_eq!(s.held(), ["rmdir runs/a"]);
}
