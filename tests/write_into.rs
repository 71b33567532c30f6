//! A writable mount of an Icechunk branch changes what is already there:
//! writes into an array's `data.bin` and chunk files that keep their size
//! become the chunks they touch, re-encoded with the array's codecs, one
//! commit per `close()` and per `fsync()`; `mkdir` makes a group and
//! `rm -r` removes an array or a group, one commit per directory; a chunk
//! someone else changed since the writer opened the file fails its
//! `close()`. Expected values are the fixture script's zarr-python reads
//! (`tests/data/expected/icechunk`) with the written bytes put in place.
#![cfg(feature = "icechunk")]

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::os::fd::IntoRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::mount::Mount;
use common::repos::{REPO, refs};

/// The fixture repository copied into `dir`, and a spool directory.
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    (repo, dir.join("spool"))
}

fn writable(repo: &Path, spool: &Path) -> Mount {
    Mount::at(repo, &["--writable", "--spool-dir", spool.to_str().unwrap()])
}

/// zarr-python's read of array `name` on the fixture's main branch.
fn expected(name: &str) -> Vec<u8> {
    std::fs::read(common::data_dir().join(format!("expected/icechunk/branches/main/{name}.bin"))).unwrap()
}

/// How many snapshots the repository holds: one more per commit.
fn snapshots(repo: &Path) -> usize {
    std::fs::read_dir(repo.join("snapshots")).unwrap().count()
}

/// Close `file`, returning what `close()` said (std's drop ignores it).
fn close(file: std::fs::File) -> std::io::Result<()> {
    match unsafe { libc::close(file.into_raw_fd()) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn writes_into_data_bin_and_chunk_files_become_commits_a_new_mount_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let first = snapshots(&repo);
    let ino = |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(m.mp.join(p)).unwrap());
    let others = [ino("pressure/header.cdl"), ino("pressure/data.bin")];
    // dd conv=notrunc: row 1 of temp (4 x 6 float32, chunks 2 x 3, zstd).
    let row = dir.path().join("row.bin");
    std::fs::write(&row, f32s(&[100.0, 101.0, 102.0, 103.0, 104.0, 105.0])).unwrap();
    let out = Command::new("dd")
        .arg(format!("if={}", row.display()))
        .arg(format!("of={}", m.path("temp/data.bin").display()))
        .args(["bs=24", "seek=1", "conv=notrunc", "status=none"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshots(&repo), first + 1, "one commit at dd's close: {}", m.log());
    // The commit is served from what the mount served: another array's
    // files are the same files (old code: every file was a new one).
    assert_eq!(
        [ino("pressure/header.cdl"), ino("pressure/data.bin")],
        others,
        "{}",
        m.log()
    );
    let mut temp = expected("temp");
    temp[24..48].copy_from_slice(&std::fs::read(&row).unwrap());
    assert_eq!(
        std::fs::read(m.path("temp/data.bin")).unwrap(),
        temp,
        "the mount shows it"
    );
    // A chunk file of humidity (u1, fill 255, chunks 4 x 3): two bytes of
    // row 1 of chunk 0.1 (an absent chunk's rows stay fill).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("humidity/0.1.bin"))
        .unwrap();
    f.seek(SeekFrom::Start(3)).unwrap();
    f.write_all(&[7, 8]).unwrap();
    // What was written shows to a read before the commit.
    assert_eq!(&std::fs::read(m.path("humidity/0.1.bin")).unwrap()[3..5], &[7, 8]);
    close(f).unwrap();
    assert_eq!(snapshots(&repo), first + 2, "{}", m.log());
    let mut humidity = expected("humidity");
    humidity[6 + 3..6 + 5].copy_from_slice(&[7, 8]);
    assert_eq!(std::fs::read(m.path("humidity/data.bin")).unwrap(), humidity);
    // fsync commits too; the close after more writes commits again.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("pressure/data.bin"))
        .unwrap();
    f.seek(SeekFrom::Start(4)).unwrap();
    f.write_all(&4242i32.to_le_bytes()).unwrap();
    f.sync_all().unwrap();
    assert_eq!(snapshots(&repo), first + 3, "fsync committed: {}", m.log());
    f.seek(SeekFrom::Start(12)).unwrap();
    f.write_all(&(-7i32).to_le_bytes()).unwrap();
    close(f).unwrap();
    assert_eq!(snapshots(&repo), first + 4, "{}", m.log());
    let mut pressure = expected("pressure");
    pressure[4..8].copy_from_slice(&4242i32.to_le_bytes());
    pressure[12..16].copy_from_slice(&(-7i32).to_le_bytes());
    // Each commit names the file, the program and the user.
    let log = m.log();
    assert!(log.contains("temp/data.bin written through nzfs by dd"), "{log}");
    assert!(log.contains("humidity/0.1.bin written through nzfs by"), "{log}");
    // nzfs status lists them, newest first.
    let status = common::mount::nzfs(&["status", m.mp.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("writes       4 commits (0 failed), 0 files staged"),
        "{text}"
    );
    let dd = text
        .find("temp/data.bin written through nzfs by dd")
        .expect("dd's commit listed");
    let later = text
        .find("humidity/0.1.bin written through nzfs by")
        .expect("the chunk file's listed");
    assert!(later < dd, "newest first:\n{text}");
    drop(m);
    // A new read-only mount of the branch decodes the new chunks.
    let again = Mount::at(&repo, &[]);
    assert_eq!(std::fs::read(again.path("temp/data.bin")).unwrap(), temp);
    assert_eq!(std::fs::read(again.path("humidity/data.bin")).unwrap(), humidity);
    assert_eq!(std::fs::read(again.path("pressure/data.bin")).unwrap(), pressure);
    assert!(spool.read_dir().unwrap().next().is_none(), "the spool is empty");
}

/// A write into one array keeps the decoded chunks of the others: read
/// again after the commit, `pressure` is answered from the cache (hits,
/// no decode), and `temp` shows what was written. Old code: every commit
/// served a new, empty cache, so `pressure` was decoded again.
#[test]
fn a_write_into_one_array_keeps_the_decoded_chunks_of_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let counts = || m.cache_counts();
    assert_eq!(
        common::mount::read_file(&m.mp.join("pressure/data.bin"), true),
        expected("pressure")
    );
    let first = snapshots(&repo);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.mp.join("temp/data.bin"))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &f32s(&[-1.0]), 0).unwrap();
    close(f).unwrap();
    assert_eq!(snapshots(&repo), first + 1, "{}", m.log());
    let (hits, decodes) = counts();
    assert_eq!(
        common::mount::read_file(&m.mp.join("pressure/data.bin"), true),
        expected("pressure")
    );
    let (hits_after, decodes_after) = counts();
    assert_eq!(decodes_after, decodes, "pressure was not decoded again: {}", m.log());
    assert!(
        hits_after > hits,
        "pressure came from the cache ({hits} hits, then {hits_after})"
    );
    let mut temp = expected("temp");
    temp[..4].copy_from_slice(&f32s(&[-1.0]));
    assert_eq!(
        common::mount::read_file(&m.mp.join("temp/data.bin"), true),
        temp,
        "the written array's new chunks"
    );
}

#[test]
fn a_write_that_would_change_the_size_or_a_file_that_is_not_values_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let before = refs(&repo);
    let data = m.path("pressure/data.bin");
    let mut f = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    f.seek(SeekFrom::Start(14)).unwrap();
    let err = f.write_all(&[1, 2, 3, 4]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EFBIG), "past the end: {err}");
    let err = f.set_len(8).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EPERM), "truncate: {err}");
    drop(f);
    let err = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&data)
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EPERM), "O_TRUNC: {err}");
    for view in ["temp/header.cdl", "temp/data.tif", "header.cdl"] {
        let err = std::fs::OpenOptions::new()
            .write(true)
            .open(m.mp.join(view))
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{view}: {err}");
    }
    assert_eq!(refs(&repo), before, "nothing was committed");
    assert_eq!(std::fs::read(&data).unwrap(), expected("pressure"));
}

#[test]
fn a_chunk_changed_on_the_branch_since_the_open_fails_the_close_and_a_disjoint_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let other = writable(&repo, &dir.path().join("spool2"));
    let write_at = |mount: &Mount, offset: u64, value: i32| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(mount.path("pressure/data.bin"))
            .unwrap();
        f.seek(SeekFrom::Start(offset)).unwrap();
        f.write_all(&value.to_le_bytes()).unwrap();
        f
    };
    // pressure: 4 x i4 in chunks of 2. The writer opens chunk 0's bytes;
    // another mount commits chunk 0 meanwhile: a conflict.
    let mine = write_at(&m, 0, 1);
    close(write_at(&other, 4, 2)).unwrap();
    let tip = refs(&repo);
    let err = close(mine).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_eq!(refs(&repo), tip, "the conflicting commit was not made");
    assert!(
        m.log()
            .contains("changed on the branch since the version this file showed"),
        "{}",
        m.log()
    );
    // A writer of chunk 1 while the other mount commits chunk 0: both stay.
    let mine = write_at(&m, 12, 3);
    close(write_at(&other, 0, 4)).unwrap_or_else(|e| panic!("{e}: {}", other.log()));
    close(mine).unwrap_or_else(|e| panic!("{e}: {}", m.log()));
    let mut want = expected("pressure");
    want[0..4].copy_from_slice(&4i32.to_le_bytes());
    want[4..8].copy_from_slice(&2i32.to_le_bytes());
    want[12..16].copy_from_slice(&3i32.to_le_bytes());
    drop((m, other));
    let again = Mount::at(&repo, &[]);
    assert_eq!(std::fs::read(again.path("pressure/data.bin")).unwrap(), want);
}

#[test]
fn mkdir_makes_a_group_and_rm_r_removes_a_node_one_commit_per_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let first = snapshots(&repo);
    let ino = |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(m.mp.join(p)).unwrap());
    let pressure = ino("pressure/data.bin");
    std::fs::create_dir(m.path("derived")).unwrap();
    assert_eq!(snapshots(&repo), first + 1);
    assert!(m.mp.join("derived/header.cdl").is_file(), "the new group shows");
    // Served from what the mount served: another node's files are the
    // same files (old code: every file a new one).
    assert_eq!(ino("pressure/data.bin"), pressure, "{}", m.log());
    assert_eq!(
        directories(&m.mp),
        ["derived", "humidity", "pressure", "temp", "time", "x"],
        "in its place"
    );
    let err = std::fs::create_dir(m.path("derived")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    // rmdir of a directory that lists files is refused; rm -r removes it.
    let err = std::fs::remove_dir(m.path("temp")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTEMPTY), "{err}");
    assert_eq!(snapshots(&repo), first + 1);
    let out = Command::new("rm").arg("-r").arg(m.path("temp")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshots(&repo), first + 2, "one commit for the array");
    assert!(!m.path("temp").exists());
    // A file being written is listed where it is written.
    let staged = std::fs::File::create(m.path("derived/out.nc.pid1.tmp")).unwrap();
    let names: Vec<String> = std::fs::read_dir(m.path("derived"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.contains(&"out.nc.pid1.tmp".to_string()), "{names:?}");
    drop(staged);
    std::fs::remove_file(m.path("derived/out.nc.pid1.tmp")).unwrap();
    std::fs::remove_dir(m.path("derived")).unwrap();
    assert_eq!(snapshots(&repo), first + 3);
    drop(m);
    let again = Mount::at(&repo, &[]);
    assert_eq!(directories(&again.mp), ["humidity", "pressure", "time", "x"]);
}

/// The names of the directories in `dir`, sorted.
fn directories(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| dir.join(n).is_dir())
        .collect();
    names.sort();
    names
}

#[test]
fn a_copy_of_a_writers_handle_closed_by_a_child_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let m = writable(&repo, &spool);
    let first = snapshots(&repo);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("pressure/data.bin"))
        .unwrap();
    f.write_all(&9i32.to_le_bytes()).unwrap();
    // A child started now holds a copy of the handle until its exec.
    assert!(Command::new("true").status().unwrap().success());
    assert_eq!(
        snapshots(&repo),
        first,
        "the child's close committed nothing: {}",
        m.log()
    );
    close(f).unwrap();
    assert_eq!(snapshots(&repo), first + 1, "the writer's close committed: {}", m.log());
    let mut want = expected("pressure");
    want[0..4].copy_from_slice(&9i32.to_le_bytes());
    assert_eq!(std::fs::read(m.path("pressure/data.bin")).unwrap(), want);
}

/// The owner's write bit is what lets the mount's own user write under
/// `allow_other`, where the kernel checks modes itself: a writable mount
/// shows it on its directories and files, a read-only mount does not.
#[test]
fn a_writable_mount_shows_its_owner_the_write_bit_where_writes_are_taken_and_a_read_only_one_nowhere() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = setup(dir.path());
    let mode = |p: PathBuf| std::fs::metadata(&p).unwrap().permissions().mode();
    let m = writable(&repo, &spool);
    for p in [
        m.mp.clone(),
        m.path("temp"),
        m.path("temp/data.bin"),
        m.path("temp/0.0.bin"),
    ] {
        assert_eq!(mode(p.clone()) & 0o222, 0o200, "{}", p.display());
    }
    // Only where writes are taken: not an array's header or preview, nor
    // the root group's header (old code: the write bit on every file).
    for p in [
        m.mp.join("temp/header.cdl"),
        m.mp.join("temp/preview.png"),
        m.mp.join("header.cdl"),
    ] {
        assert_eq!(mode(p.clone()) & 0o222, 0, "{}", p.display());
    }
    drop(m);
    let m = Mount::at(&repo, &[]);
    for p in [m.mp.clone(), m.path("temp"), m.path("temp/data.bin")] {
        assert_eq!(mode(p.clone()) & 0o222, 0, "{}", p.display());
    }
}
