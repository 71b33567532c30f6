//! A writable mount never loses another writer's data and takes no file
//! that would break the branch: each decision a write makes is checked at
//! the branch's tip in the session that commits (a second writer commits
//! through the Icechunk library at the moment that matters, while the
//! mount's view is an hour old); names that are no Zarr node's are refused
//! before anything is staged; a file no commit would take is refused at
//! its open; what a shared `mmap` writes after the `close()` is committed;
//! a reader's `fsync` commits nothing; names reach the log escaped.
#![cfg(feature = "icechunk")]

mod common;

use std::io::Write;
use std::os::fd::IntoRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::mount::Mount;
use common::repos::{REPO, refs};
use nzfs::store::icechunk::Repo;

/// A model's output as CDL: two variables, so that a name can be patched.
const CDL: &str = r#"netcdf out {
dimensions:
	n = 3 ;
variables:
	float aa(n) ;
		aa:units = "K" ;
	float ab(n) ;
data:
 aa = 1, 2, 3 ;
 ab = 4, 5, 6 ;
}
"#;

/// An array's metadata, as another writer commits it.
const ARRAY: &[u8] = br#"{"zarr_format":3,"node_type":"array","shape":[2],"data_type":"int32",
"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},
"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},
"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}"#;

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The fixture repository copied into `dir`, the CDL's classic file and a
/// spool directory.
fn setup(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let repo = dir.join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    let cdl = dir.join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let nc = dir.join("source.nc");
    ok(Command::new("ncgen").args(["-k", "classic", "-o"]).arg(&nc).arg(&cdl));
    (repo, nc, dir.join("spool"))
}

/// A writable mount whose view of the branch is an hour old but for its
/// own commits: another writer's commit is not seen.
fn writable(repo: &Path, spool: &Path, extra: &[&str]) -> Mount {
    let mut args = vec![
        "--writable",
        "--metadata-ttl",
        "3600",
        "--spool-dir",
        spool.to_str().unwrap(),
    ];
    args.extend(extra);
    Mount::at(repo, &args)
}

/// Another writer of the branch: the Icechunk library in this process.
fn other_writer(repo: &Path, message: &str, keys: &[(&str, &[u8])]) {
    let r = Repo::open(repo.to_str().unwrap(), &common::repos::local_options()).unwrap();
    let c = r.begin("main").unwrap();
    for (key, bytes) in keys {
        c.put(key, bytes.to_vec()).unwrap();
    }
    c.commit(message).unwrap();
}

/// Close `file`, returning what `close()` said (std's drop ignores it).
fn close(file: std::fs::File) -> std::io::Result<()> {
    match unsafe { libc::close(file.into_raw_fd()) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[test]
fn rmdir_of_a_group_another_writer_just_filled_is_enotempty_and_their_array_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    std::fs::create_dir(m.mp.join("scratch")).unwrap();
    other_writer(&repo, "precious", &[("scratch/precious/zarr.json", ARRAY)]);
    let before = refs(&repo);
    // The mount still shows scratch empty; at the tip it is not.
    let e = std::fs::remove_dir(m.mp.join("scratch")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY), "{e}: {}", m.log());
    assert_eq!(refs(&repo), before, "nothing committed");
    assert!(
        m.log().contains("scratch/precious"),
        "the log names what is there: {}",
        m.log()
    );
    drop(m);
    let fresh = Mount::at(&repo, &[]);
    assert!(
        fresh.mp.join("scratch/precious").is_dir(),
        "the other writer's array is on the branch"
    );
}

#[test]
fn the_close_after_an_fsync_keeps_what_another_writer_added_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    let whole = std::fs::read(&source).unwrap();
    let mut f = std::fs::File::create(m.mp.join("run.nc")).unwrap();
    f.write_all(&whole).unwrap();
    f.sync_all().unwrap();
    assert!(m.mp.join("run/aa").is_dir(), "the fsync committed x: {}", m.log());
    other_writer(&repo, "extra", &[("run/extra/zarr.json", ARRAY)]);
    let before = refs(&repo);
    // More writes (the same bytes again), then the close: it would replace
    // x, and x holds what this file did not make.
    use std::os::unix::fs::FileExt;
    f.write_all_at(&whole, 0).unwrap();
    let e = close(f).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}: {}", m.log());
    assert_eq!(refs(&repo), before, "nothing committed");
    assert!(m.log().contains("run/extra"), "{}", m.log());
    drop(m);
    let fresh = Mount::at(&repo, &[]);
    assert!(
        fresh.mp.join("run/extra").is_dir(),
        "the other writer's array is on the branch"
    );
    assert!(fresh.mp.join("run/aa").is_dir(), "and the fsync's commit");
}

#[test]
fn names_that_are_no_zarr_node_are_refused_at_open_and_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    let before = refs(&repo);
    std::fs::create_dir(m.mp.join("g")).unwrap();
    let made_g = refs(&repo);
    assert_ne!(made_g, before);
    // A stem that is no node's name: refused at the open, nothing staged.
    for name in ["..nc", "g/.nc", "zarr.json.nc", "__x.nc", "a.nc.", "notes.txt"] {
        let e = std::fs::File::create(m.mp.join(name)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{name}: {e}");
    }
    assert!(
        m.log().contains("NAME.nc"),
        "the log says which names are taken: {}",
        m.log()
    );
    for name in ["..", "zarr.json", "__y", "y.nc"] {
        assert!(std::fs::create_dir(m.mp.join(name)).is_err(), "mkdir {name}");
    }
    assert_eq!(refs(&repo), made_g, "nothing committed");
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0, "nothing staged");
    // Variables of the same name, and a variable named zarr.json: the
    // header patched where ncgen refuses (same-length names).
    let bytes = std::fs::read(&source).unwrap();
    let patch = |from: &[u8], to: &[u8]| {
        let mut b = bytes.clone();
        let at = b.windows(from.len()).position(|w| w == from).unwrap();
        b[at..at + to.len()].copy_from_slice(to);
        b
    };
    let dup = patch(b"\0\0\0\x02ab\0\0", b"\0\0\0\x02aa\0\0");
    let mut f = std::fs::File::create(m.mp.join("dup.nc")).unwrap();
    f.write_all(&dup).unwrap();
    assert_eq!(close(f).unwrap_err().raw_os_error(), Some(libc::EIO), "{}", m.log());
    assert!(
        m.log().contains("two variables named \\\"aa\\\"") || m.log().contains("two variables named"),
        "{}",
        m.log()
    );
    assert_eq!(refs(&repo), made_g, "the branch is as it was");
    // ncgen takes '.' in names: zarr.json is a variable's name to it.
    let cdl = dir.path().join("zj.cdl");
    std::fs::write(
        &cdl,
        CDL.replace("float ab", "float zarr.json")
            .replace(" ab =", " zarr.json ="),
    )
    .unwrap();
    let zj = dir.path().join("zj.nc");
    ok(Command::new("ncgen").args(["-k", "classic", "-o"]).arg(&zj).arg(&cdl));
    let mut f = std::fs::File::create(m.mp.join("zj.nc")).unwrap();
    f.write_all(&std::fs::read(&zj).unwrap()).unwrap();
    assert_eq!(close(f).unwrap_err().raw_os_error(), Some(libc::EIO), "{}", m.log());
    assert_eq!(refs(&repo), made_g, "the branch is as it was");
}

#[test]
fn a_shared_mmap_written_after_the_close_is_committed_at_its_unmap() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    let before = refs(&repo);
    let path = m.mp.join("pressure/data.bin");
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    use std::os::fd::AsRawFd;
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    // The C idiom: close the descriptor, then write into the map.
    close(f).unwrap();
    let bytes = unsafe { std::slice::from_raw_parts_mut(map as *mut u8, len) };
    bytes[4..8].copy_from_slice(&4242i32.to_le_bytes());
    assert_eq!(unsafe { libc::munmap(map, len) }, 0);
    // The release that follows the unmap commits.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while refs(&repo) == before && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_ne!(refs(&repo), before, "committed: {}", m.log());
    drop(m);
    let fresh = Mount::at(&repo, &[]);
    let got = std::fs::read(fresh.mp.join("pressure/data.bin")).unwrap();
    assert_eq!(&got[4..8], &4242i32.to_le_bytes());
}

#[test]
fn a_readers_fsync_commits_nothing_and_a_file_being_written_keeps_its_mode() {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let users = common::users::Users::create();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &["-o", "allow_other"]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = refs(&repo);
    let whole = std::fs::read(&source).unwrap();
    // The owner's run.nc, whole but not closed, open to others' reading.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(m.mp.join("run.nc"))
        .unwrap();
    f.write_all(&whole).unwrap();
    // coreutils' sync FILE opens it read-only and fsyncs it.
    let synced = Command::new("runuser")
        .args(["-u", &users.other, "--", "sync"])
        .arg(m.mp.join("run.nc"))
        .output()
        .unwrap();
    assert!(synced.status.success(), "{}", String::from_utf8_lossy(&synced.stderr));
    assert_eq!(refs(&repo), before, "a reader's fsync committed nothing: {}", m.log());
    // A file created 0600 shows 0600: others cannot read it.
    let g = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(m.mp.join("secret.nc"))
        .unwrap();
    let mode = std::fs::metadata(m.mp.join("secret.nc")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let read = common::users::cat_output(&users.other, &m.mp.join("secret.nc"));
    assert!(!read.status.success(), "another user read a 0600 file being written");
    drop(g);
    drop(f);
    assert_ne!(refs(&repo), before, "the owner's close commits: {}", m.log());
}

#[test]
fn a_file_name_with_a_newline_reaches_the_log_and_status_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    let name = "a\nFORGED line\x1b[2J.nc";
    std::fs::write(m.mp.join(name), std::fs::read(&source).unwrap()).unwrap();
    let log = m.log();
    assert!(log.contains("committed a closed file"), "{log}");
    assert!(!log.lines().any(|l| l.starts_with("FORGED")), "{log}");
    assert!(!log.contains('\x1b'), "{log}");
    let status = common::mount::nzfs(&["status", m.mp.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("written through nzfs"), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("FORGED")), "{text}");
    assert!(!text.contains('\x1b'), "{text}");
}

#[test]
fn a_failed_commit_is_shown_with_its_reason_and_kept_bytes_count_and_unmount_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let limit = std::fs::metadata(&source).unwrap().len() * 3 / 2;
    let m = writable(&repo, &spool, &["--spool-size", &limit.to_string()]);
    // Not netCDF classic: its close fails and its bytes are kept.
    let junk = vec![b'x'; limit as usize / 2 + 1];
    let mut f = std::fs::File::create(m.mp.join("junk.nc")).unwrap();
    f.write_all(&junk).unwrap();
    assert_eq!(close(f).unwrap_err().raw_os_error(), Some(libc::EIO));
    let status = common::mount::nzfs(&["status", m.mp.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("FAILED") && text.contains("junk.nc written through nzfs"),
        "{text}"
    );
    assert!(text.contains("kept ") && text.contains("its commit failed"), "{text}");
    // The kept bytes count against the limit: a file that would fit an
    // empty spool does not.
    let mut g = std::fs::File::create(m.mp.join("next.nc")).unwrap();
    let e = g.write_all(&std::fs::read(&source).unwrap()).and_then(|_| g.flush());
    assert_eq!(e.unwrap_err().raw_os_error(), Some(libc::ENOSPC), "{}", m.log());
    drop(g);
    // nzfs unmount names what the spool keeps before it goes.
    let out = common::mount::nzfs(&["unmount", m.mp.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("kept in the spool") && said.contains(spool.to_str().unwrap()),
        "{said}"
    );
}

/// A CDF-1 file of `n` scalar `int` variables `v0`, `v1`, … (ncdump reads
/// it), holding 0, 1, ….
fn many_variables(path: &Path, n: u32) {
    let name = |s: &str| {
        let mut b = (s.len() as u32).to_be_bytes().to_vec();
        b.extend(s.as_bytes());
        b.extend(vec![0u8; (4 - s.len() % 4) % 4]);
        b
    };
    let entries: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut e = name(&format!("v{i}"));
            e.extend(0u32.to_be_bytes()); // rank 0
            e.extend([0u8; 8]); // no attributes
            e.extend(4u32.to_be_bytes()); // int
            e.extend(4u32.to_be_bytes()); // vsize
            e
        })
        .collect();
    let header = 4 + 4 + 8 + 8 + 8 + entries.iter().map(|e| e.len() + 4).sum::<usize>();
    let mut b = b"CDF\x01".to_vec();
    b.extend(0u32.to_be_bytes()); // numrecs
    b.extend([0u8; 16]); // no dimensions, no global attributes
    b.extend(0x0Bu32.to_be_bytes());
    b.extend(n.to_be_bytes());
    for (i, e) in entries.iter().enumerate() {
        b.extend(e);
        b.extend((header as u32 + 4 * i as u32).to_be_bytes());
    }
    for i in 0..n {
        b.extend((i as i32).to_be_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_file_of_many_variables_is_bounded_before_it_is_read_and_its_commit_within_a_constant() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &["--cache-size", "16MiB"]);
    let pid = m.daemon_pid();
    let before = refs(&repo);
    let start = common::mount::vm_hwm(pid);
    // One past the bound: refused at the close, before a variable is read.
    let over = dir.path().join("over.nc");
    many_variables(&over, 8193);
    ok(Command::new("ncdump").arg("-h").arg(&over));
    let mut f = std::fs::File::create(m.mp.join("over.nc")).unwrap();
    f.write_all(&std::fs::read(&over).unwrap()).unwrap();
    assert_eq!(close(f).unwrap_err().raw_os_error(), Some(libc::EIO));
    assert!(m.log().contains("8193 variables"), "{}", m.log());
    assert_eq!(refs(&repo), before);
    // At the bound: one commit, and the daemon within the cache budget and
    // the stated constant (docs/writing.md: 6 KiB a variable, 48 MiB).
    let at = dir.path().join("at.nc");
    many_variables(&at, 8192);
    std::fs::copy(&at, m.mp.join("at.nc")).unwrap();
    assert_ne!(refs(&repo), before, "{}", m.log());
    assert!(m.mp.join("at/v8191").is_dir());
    let grew = common::mount::vm_hwm(pid).saturating_sub(start);
    assert!(grew < (16 << 20) + (64 << 20), "the daemon grew by {} MiB", grew >> 20);
}

/// Writes into the `data.bin` of an array of 2^17 chunks of 16 bytes
/// (16-byte chunks are what a careless `chunks=` gives): all of them in
/// one close is refused before a chunk is read (a quarter of a 16 MiB
/// cache budget at 1 KiB a chunk is 4,096 chunks), the branch stays as it
/// was and the bytes stay in the spool; 4,096 of them commit, the daemon
/// within the budget and a stated constant (13 MiB were measured). Old
/// code: the 2 MiB close committed all 131,072 chunks.
#[test]
fn a_write_into_more_chunks_than_one_commit_holds_is_refused_and_fewer_commit() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let tiny = br#"{"zarr_format":3,"node_type":"array","shape":[2097152],"data_type":"uint8",
"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},
"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},
"fill_value":0,"codecs":[{"name":"bytes"}]}"#;
    other_writer(&repo, "an array of 16-byte chunks", &[("tiny/zarr.json", tiny)]);
    let m = writable(&repo, &spool, &["--cache-size", "16MiB"]);
    let pid = m.daemon_pid();
    let start = common::mount::vm_hwm(pid);
    let before = refs(&repo);
    let data = m.mp.join("tiny/data.bin");
    let open = || std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    let f = open();
    f.write_all_at(&vec![7u8; 2 << 20], 0).unwrap();
    assert_eq!(close(f).unwrap_err().raw_os_error(), Some(libc::EIO));
    assert!(m.log().contains("more than 4096 chunks"), "{}", m.log());
    assert_eq!(refs(&repo), before, "nothing committed");
    let kept = common::servers::files(&spool);
    assert!(
        kept.iter()
            .any(|p| std::fs::metadata(p).is_ok_and(|md| md.len() >= 2 << 20)),
        "the bytes are kept in the spool: {kept:?}"
    );
    let f = open();
    f.write_all_at(&vec![9u8; 4096 * 16], 16 << 10).unwrap();
    close(f).unwrap();
    assert_ne!(refs(&repo), before, "{}", m.log());
    let got = std::fs::read(&data).unwrap();
    assert!(got[16 << 10..(16 << 10) + 4096 * 16].iter().all(|&b| b == 9));
    assert!(
        got[..16 << 10].iter().all(|&b| b == 0),
        "the refused bytes are not shown"
    );
    let grew = common::mount::vm_hwm(pid).saturating_sub(start);
    assert!(grew < (16 << 20) + (48 << 20), "the daemon grew by {} MiB", grew >> 20);
}

/// The inode numbers of `files`.
fn inodes(files: &[PathBuf]) -> Vec<u64> {
    use std::os::unix::fs::MetadataExt;
    files.iter().map(|f| std::fs::metadata(f).unwrap().ino()).collect()
}

/// `rm -r` of a group of 600 arrays through a writable mount: one commit
/// per directory, each served from what the mount served (no read of the
/// branch's metadata), so the files of the nodes it left keep their inode
/// numbers (old code: every file of the mount was a new file at each
/// removal, and the whole hierarchy was read again, 42 s here against 22
/// s now). The daemon's memory stays bounded: the cache of
/// snapshots holds five of the size of the one shown (at least 10,000
/// nodes), not the crate's 500,000, so the snapshot each commit leaves
/// does not stay: within 48 MiB (25 MiB measured). Old code: every
/// snapshot stayed, the daemon up by 147 MiB (1,000 arrays: 379 MiB,
/// and 33 MiB after).
#[test]
fn rm_r_of_a_wide_group_keeps_the_daemons_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let mut keys: Vec<(String, &[u8])> = vec![("wide/zarr.json".into(), br#"{"zarr_format":3,"node_type":"group"}"#)];
    keys.extend((0..600).map(|i| (format!("wide/a{i}/zarr.json"), ARRAY)));
    keys.push(("kept/zarr.json".into(), ARRAY));
    let keys: Vec<(&str, &[u8])> = keys.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    other_writer(&repo, "a wide group", &keys);
    let m = writable(&repo, &spool, &[]);
    let pid = m.daemon_pid();
    let start = common::mount::vm_hwm(pid);
    let kept: Vec<PathBuf> = ["header.cdl", "data.bin", "0.bin"]
        .iter()
        .map(|f| m.mp.join("kept").join(f))
        .collect();
    let before = inodes(&kept);
    ok(Command::new("rm").arg("-r").arg(m.mp.join("wide")));
    assert!(!m.mp.join("wide").exists());
    assert_eq!(
        inodes(&kept),
        before,
        "the files of a node no removal touched are the same files"
    );
    let grew = common::mount::vm_hwm(pid).saturating_sub(start);
    assert!(grew < 48 << 20, "the daemon grew by {} MiB", grew >> 20);
    drop(m);
    let fresh = Mount::at(&repo, &[]);
    assert!(!fresh.mp.join("wide").exists(), "the branch has no wide group");
    assert!(fresh.mp.join("kept/data.bin").is_file());
}

/// A removal committed on a tip another writer moved since the mount
/// last looked is not served from what the mount served: the mount reads
/// the branch again, and shows the other writer's node at once (its view
/// is an hour old).
#[test]
fn a_removal_on_a_tip_another_writer_moved_shows_their_node_too() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    std::fs::create_dir(m.mp.join("scratch")).unwrap();
    other_writer(&repo, "theirs", &[("theirs/zarr.json", ARRAY)]);
    assert!(!m.mp.join("theirs").exists(), "not seen yet: {}", m.log());
    std::fs::remove_dir(m.mp.join("scratch")).unwrap();
    assert!(!m.mp.join("scratch").exists());
    assert!(m.mp.join("theirs/data.bin").is_file(), "{}", m.log());
}

/// A refused write is answered through the adapter's one error path: it
/// is counted in `nzfs status` by its kind, and logged once, naming the
/// request and the pid of the process that asked. (It was neither.)
#[test]
fn a_refused_write_is_counted_in_status_and_logged_with_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let m = writable(&repo, &spool, &[]);
    let touch = Command::new("touch")
        .arg(m.mp.join("notes.txt"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = touch.id();
    let out = touch.wait_with_output().unwrap();
    assert!(!out.status.success(), "touch of a name no commit takes failed");
    let s = m.status();
    let by_kind = s.get("errors").and_then(|e| e.get("by_kind")).unwrap();
    assert_eq!(by_kind.get("invalid_name").and_then(|v| v.as_u64()), Some(1), "{s}");
    let log = m.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("notes.txt")).collect();
    assert_eq!(lines.len(), 1, "one line: {log}");
    assert!(
        lines[0].contains(&format!("pid={pid}")) && lines[0].contains("create"),
        "the request and its caller: {}",
        lines[0]
    );
}
