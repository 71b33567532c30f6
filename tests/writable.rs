//! A writable mount of an Icechunk branch (`--writable`), written by the
//! programs users have: netCDF-C's `ncgen` and `nccopy`, CDO and NCO. Each
//! file closed as `NAME.nc` in a group's directory becomes the group
//! `NAME`, one commit each, shown by the mount as `close()` returns; what
//! is not netCDF classic fails its `close()` and leaves the branch as it
//! was; a daemon killed mid-write leaves the branch as it was; and every
//! store or version a commit cannot go to is refused.
#![cfg(feature = "icechunk")]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::mount::{Mount, nzfs, vm_hwm};
use common::netcdf_tools::{data_section, ncdump, ok};
use common::repos::{REPO, refs};

/// A model's output: a record variable, a fill value, attributes.
const CDL: &str = r#"netcdf out {
dimensions:
	time = UNLIMITED ;
	n = 3 ;
variables:
	double time(time) ;
		time:units = "days since 2000-01-01" ;
	float v(time, n) ;
		v:_FillValue = -1.f ;
		v:units = "K" ;
// global attributes:
		:title = "written through nzfs" ;
data:
 time = 0, 1 ;
 v = 1.5, _, 3, 4, 5, 6.25 ;
}
"#;

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/setup.sh --test installs it)"))
}

/// The fixture repository copied into `dir`, the CDL's netCDF classic file
/// beside it, and a spool directory.
fn setup(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let repo = dir.join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    let cdl = dir.join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let nc = dir.join("source.nc");
    ok(Command::new("ncgen").args(["-k", "classic", "-o"]).arg(&nc).arg(&cdl));
    (repo, nc, dir.join("spool"))
}

#[test]
fn netcdf_programs_write_new_groups_one_commit_each() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let cdl = dir.path().join("out.cdl");
    let mut tips = vec![refs(&repo)];
    // ncgen writes the file itself; nccopy copies one; CDO computes a time
    // mean; NCO writes a temporary file and renames it.
    ok(Command::new("ncgen")
        .args(["-k", "64-bit offset", "-o"])
        .arg(m.mp.join("from_ncgen.nc"))
        .arg(&cdl));
    tips.push(refs(&repo));
    ok(Command::new("nccopy")
        .args(["-k", "classic"])
        .arg(&source)
        .arg(m.mp.join("from_nccopy.nc")));
    tips.push(refs(&repo));
    ok(Command::new("cdo")
        .args(["-s", "timmean"])
        .arg(&source)
        .arg(m.mp.join("from_cdo.nc")));
    tips.push(refs(&repo));
    ok(Command::new("ncks")
        .args(["-O", "-3"])
        .arg(&source)
        .arg(m.mp.join("from_ncks.nc")));
    // The kernel is told of the rename's group after its answer: wait for
    // the group to show.
    let start = std::time::Instant::now();
    while !m.mp.join("from_ncks").is_dir() {
        assert!(start.elapsed().as_secs() < 10, "from_ncks never showed: {}", m.log());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tips.push(refs(&repo));
    for pair in tips.windows(2) {
        assert_ne!(pair[0], pair[1], "each file moved the branch");
    }
    let want = data_section(&source);
    for name in ["from_ncgen", "from_nccopy", "from_ncks"] {
        let group = m.mp.join(name);
        assert!(group.is_dir(), "{name}: {}", m.log());
        assert!(
            !m.mp.join(format!("{name}.nc")).exists(),
            "{name}.nc left the directory"
        );
        assert_eq!(
            data_section(&group.join(format!("{name}.nc"))),
            want,
            "{name}: the values ncdump prints"
        );
        let cdl = std::fs::read_to_string(group.join("header.cdl")).unwrap();
        for line in [
            "float v(time, n) ;",
            "v:_FillValue = -1.f ;",
            "v:units = \"K\" ;",
            ":title = \"written through nzfs\" ;",
        ] {
            assert!(cdl.contains(line), "{name}: {line:?} in\n{cdl}");
        }
    }
    // CDO's mean of the two records, with a fill value in one of them.
    let mean = ncdump(&["-v", "v"], &m.mp.join("from_cdo/from_cdo.nc"));
    assert!(mean.contains("2.75, 5, 4.625"), "{mean}");
    // Each commit names its file, program and user.
    let log = m.log();
    for program in ["ncgen", "nccopy", "cdo", "ncks"] {
        assert!(
            log.contains(&format!("written through nzfs by {program}")),
            "{program}: {log}"
        );
    }
    drop(m);
    // A new read-only mount of the branch shows the same groups.
    let again = Mount::at(&repo, &[]);
    assert_eq!(data_section(&again.mp.join("from_nccopy/from_nccopy.nc")), want);
}

#[test]
fn what_is_not_netcdf_classic_fails_its_close_and_leaves_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let before = refs(&repo);
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let mut f = std::fs::File::create(m.mp.join("notes.nc")).unwrap();
    f.write_all(b"these are notes, not netCDF").unwrap();
    // close() is where the commit is made, and where it fails.
    let fd = std::os::fd::IntoRawFd::into_raw_fd(f);
    let closed = unsafe { libc::close(fd) };
    assert_eq!(closed, -1, "close() of a file that is not netCDF fails");
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EIO));
    assert!(m.log().contains("not a netCDF classic file"), "{}", m.log());
    assert_eq!(refs(&repo), before, "the branch did not move");
    // The rest of the mount is read-only as ever.
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(m.mp.join("header.cdl"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    // Its bytes stay in the spool, and the log says where.
    drop(m);
    let kept: Vec<_> = std::fs::read_dir(&spool).unwrap().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
}

#[test]
fn a_daemon_killed_mid_write_leaves_the_branch_and_the_next_mount_says_what_was_left() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let before = refs(&repo);
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let bytes = std::fs::read(&source).unwrap();
    let mut f = std::fs::File::create(m.mp.join("half.nc")).unwrap();
    f.write_all(&bytes[..bytes.len() / 2]).unwrap();
    m.kill_daemon();
    drop(f);
    drop(m);
    assert_eq!(refs(&repo), before, "the branch did not move");
    let again = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    assert!(!again.mp.join("half").exists());
    assert!(
        again.log().contains("left in the spool") && again.log().contains("half.nc"),
        "{}",
        again.log()
    );
}

#[test]
fn writable_is_refused_for_every_store_or_version_a_commit_cannot_go_to() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, _) = setup(dir.path());
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let plain = common::data_dir().join("sample.zarr");
    let repo_s = repo.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec![plain.to_str().unwrap(), "--writable"],
            "not an Icechunk repository",
        ),
        (vec![plain.to_str().unwrap(), "-o", "rw"], "not an Icechunk repository"),
        (vec![repo_s, "--writable", "--tag", "v1"], "tag v1"),
        (
            vec![repo_s, "--writable", "--snapshot", "0000000000000000000A"],
            "is fixed",
        ),
        (vec![repo_s, "-o", "rw", "--all-versions"], "--all-versions"),
        (vec![repo_s, "--writable", "--metadata-ttl", "never"], "its own commits"),
    ];
    for (args, why) in cases {
        let mut all = vec!["mount"];
        all.extend(&args);
        all.push(mp.to_str().unwrap());
        let out = nzfs(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why) && err.contains("--writable"), "{args:?}: {err}");
    }
}

/// A CDF-2 file of `records` records of one float variable `v(time, x)`,
/// 1 MiB each (x = 262144), the values `record + i / 2^20`.
fn big_classic(path: &Path, records: u32) {
    let x: u32 = 1 << 18;
    let mut h = b"CDF\x02".to_vec();
    h.extend(records.to_be_bytes());
    let name = |h: &mut Vec<u8>, s: &str| {
        h.extend((s.len() as u32).to_be_bytes());
        h.extend(s.as_bytes());
        h.extend(vec![0u8; (4 - s.len() % 4) % 4]);
    };
    h.extend([0, 0, 0, 0x0A, 0, 0, 0, 2]);
    name(&mut h, "time");
    h.extend(0u32.to_be_bytes());
    name(&mut h, "x");
    h.extend(x.to_be_bytes());
    h.extend([0u8; 8]); // no global attributes
    h.extend([0, 0, 0, 0x0B, 0, 0, 0, 1]);
    name(&mut h, "v");
    h.extend(2u32.to_be_bytes());
    h.extend(0u32.to_be_bytes());
    h.extend(1u32.to_be_bytes());
    h.extend([0u8; 8]); // no attributes
    h.extend(5u32.to_be_bytes()); // float
    h.extend((x * 4).to_be_bytes());
    let begin = h.len() as u64 + 8;
    h.extend(begin.to_be_bytes());
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(&h).unwrap();
    for r in 0..records {
        let record: Vec<u8> = (0..x)
            .flat_map(|i| (r as f32 + i as f32 / (1 << 20) as f32).to_be_bytes())
            .collect();
        f.write_all(&record).unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn writing_a_large_file_keeps_the_daemon_within_its_cache_budget_and_a_constant() {
    // The staged bytes are on disk and the commit holds one chunk at a
    // time (docs/writing.md): the daemon's peak stays under its cache
    // budget (16 MiB, which writing does not use) plus 64 MiB, for a file
    // of 256 MiB (a 2 GiB file, measured with a release build: 43 MiB).
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, spool) = setup(dir.path());
    let source = dir.path().join("big.nc");
    big_classic(&source, 256);
    let m = Mount::at(
        &repo,
        &[
            "--writable",
            "--cache-size",
            "16MiB",
            "--spool-dir",
            spool.to_str().unwrap(),
        ],
    );
    std::io::copy(
        &mut std::fs::File::open(&source).unwrap(),
        &mut std::fs::File::create(m.mp.join("big.nc")).unwrap(),
    )
    .unwrap();
    let peak = vm_hwm(m.daemon_pid());
    assert!(m.mp.join("big/v").is_dir(), "{}", m.log());
    assert!(peak < (16 + 64) << 20, "the daemon's peak: {} MiB", peak >> 20);
    // The last record's last values, through the new group's data.bin.
    let data = std::fs::File::open(m.mp.join("big/v/data.bin")).unwrap();
    let mut tail = [0u8; 8];
    std::os::unix::fs::FileExt::read_exact_at(&data, &mut tail, (256u64 << 20) - 8).unwrap();
    let want: Vec<u8> = [(1u32 << 18) - 2, (1 << 18) - 1]
        .iter()
        .flat_map(|&i| (255.0f32 + i as f32 / (1 << 20) as f32).to_le_bytes())
        .collect();
    assert_eq!(tail.to_vec(), want);
}

#[test]
fn a_repository_on_s3_takes_a_commit_through_the_mount() {
    use common::servers::Moto;
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    assert!(moto.upload("nzfs", &common::data_dir().join(REPO), "repos/history") >= 10);
    let dir = tempfile::tempdir().unwrap();
    let (_, source, spool) = setup(dir.path());
    let options = moto.options();
    let mut args: Vec<&str> = options.iter().map(String::as_str).collect();
    args.extend(["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let url = Path::new("icechunk+s3://nzfs/repos/history");
    let m = Mount::at(url, &args);
    ok(Command::new("nccopy")
        .args(["-k", "classic"])
        .arg(&source)
        .arg(m.mp.join("on_s3.nc")));
    assert_eq!(
        data_section(&m.mp.join("on_s3/on_s3.nc")),
        data_section(&source),
        "{}",
        m.log()
    );
    // A write into an array (pressure: 4 x int32, chunks of 2) and a new
    // group, each a commit in the bucket.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.mp.join("pressure/data.bin"))
        .unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&77i32.to_le_bytes(), 8).unwrap();
    drop(f);
    std::fs::create_dir(m.mp.join("made_on_s3")).unwrap();
    drop(m);
    // A new mount of the bucket's branch shows the commits.
    let options = moto.options();
    let args: Vec<&str> = options.iter().map(String::as_str).collect();
    let again = Mount::at(url, &args);
    assert_eq!(data_section(&again.mp.join("on_s3/on_s3.nc")), data_section(&source));
    let mut pressure = std::fs::read(common::data_dir().join("expected/icechunk/branches/main/pressure.bin")).unwrap();
    pressure[8..12].copy_from_slice(&77i32.to_le_bytes());
    assert_eq!(std::fs::read(again.mp.join("pressure/data.bin")).unwrap(), pressure);
    assert!(again.mp.join("made_on_s3").is_dir());
}

#[test]
fn under_allow_other_another_user_cannot_write_and_the_owner_can() {
    use std::os::unix::fs::PermissionsExt;
    let users = common::users::Users::create();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (repo, source, spool) = setup(dir.path());
    let before = refs(&repo);
    // The mount(8) form: -o rw is --writable.
    let m = Mount::at(&repo, &["-o", "allow_other,rw", "--spool-dir", spool.to_str().unwrap()]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = run(Command::new("runuser")
        .args(["-u", &users.other, "--", "cp"])
        .arg(&source)
        .arg(m.mp.join("theirs.nc")));
    let said = String::from_utf8_lossy(&theirs.stderr);
    assert!(!theirs.status.success() && said.contains("Permission denied"), "{said}");
    assert!(!m.mp.join("theirs").exists());
    assert_eq!(refs(&repo), before, "the branch did not move");
    // Root, who mounted, writes.
    ok(Command::new("nccopy")
        .args(["-k", "classic"])
        .arg(&source)
        .arg(m.mp.join("mine.nc")));
    assert!(m.mp.join("mine").is_dir(), "{}", m.log());
}

#[test]
fn a_copy_of_the_handle_closed_by_a_child_commits_nothing_and_the_writers_close_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let before = refs(&repo);
    let mut f = std::fs::File::create(m.mp.join("forked.nc")).unwrap();
    f.write_all(&std::fs::read(&source).unwrap()).unwrap();
    // A child started while the file is open holds a copy of the handle
    // until its exec closes it: a flush from another process.
    ok(&mut Command::new("true"));
    assert_eq!(refs(&repo), before, "the child's close committed nothing: {}", m.log());
    assert!(
        std::fs::read_dir(&m.mp)
            .unwrap()
            .any(|e| e.unwrap().file_name() == "forked.nc"),
        "still being written, and listed"
    );
    drop(f);
    assert_ne!(refs(&repo), before, "the writer's close committed: {}", m.log());
    assert_eq!(data_section(&m.mp.join("forked/forked.nc")), data_section(&source));
}

#[test]
fn fsync_commits_a_whole_file_and_the_close_after_more_writes_replaces_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, source, spool) = setup(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let later = dir.path().join("later.nc");
    let cdl = dir.path().join("later.cdl");
    std::fs::write(&cdl, CDL.replace("v = 1.5, _, 3, 4, 5, 6.25", "v = 9, 8, 7, 6, 5, 4")).unwrap();
    ok(Command::new("ncgen")
        .args(["-k", "classic", "-o"])
        .arg(&later)
        .arg(&cdl));
    let before = refs(&repo);
    let mut f = std::fs::File::create(m.mp.join("run.nc")).unwrap();
    // Half a file: fsync puts it on the spool's disk and commits nothing.
    let whole = std::fs::read(&source).unwrap();
    f.write_all(&whole[..whole.len() / 2]).unwrap();
    f.sync_all().unwrap();
    assert_eq!(refs(&repo), before, "not whole yet: {}", m.log());
    f.write_all(&whole[whole.len() / 2..]).unwrap();
    f.sync_all().unwrap();
    let synced = refs(&repo);
    assert_ne!(synced, before, "a whole file's fsync commits: {}", m.log());
    assert_eq!(data_section(&m.mp.join("run/run.nc")), data_section(&source));
    // The writer goes on: the close commits again, replacing the group.
    f.set_len(0).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&std::fs::read(&later).unwrap(), 0).unwrap();
    drop(f);
    assert_ne!(refs(&repo), synced, "{}", m.log());
    assert_eq!(data_section(&m.mp.join("run/run.nc")), data_section(&later));
    assert!(!m.mp.join("run.nc").exists(), "the file left the spool");
    assert!(m.log().contains("run.nc synced through nzfs by"), "{}", m.log());
}
