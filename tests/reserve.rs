//! A change re-serves only what changed, in a store of 2,000 arrays (20
//! groups of 100): after an append to one array seen by a live mount of
//! a plain store, and after a one-value edit of one array committed
//! through a writable mount of an Icechunk branch, every other array's
//! files keep their inode numbers and their mtimes (so the kernel keeps
//! their pages), and
//! every other array's decoded chunks stay in the cache (`nzfs status`'s
//! decode count does not move when they are read again).
//!
//! The store is written here, each array one zstd chunk of four float32s
//! (`i + j/4` for array `i`): what numpy's `tobytes()` gives for those
//! values is what each `data.bin` must read.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::mount::{Mount, read_file};

const GROUPS: usize = 20;
const PER_GROUP: usize = 100;

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Array `i`'s values from element `from` on, `n` of them.
fn values(i: usize, from: usize, n: usize) -> Vec<u8> {
    f32s(&(from..from + n).map(|j| i as f32 + j as f32 / 4.0).collect::<Vec<_>>())
}

fn array_json(len: u64) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{len}], "data_type": "float32",
"chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4]}}}},
"chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
"fill_value": 0.0, "dimension_names": ["x"],
"codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}},
{{"name": "zstd", "configuration": {{"level": 1, "checksum": false}}}}]}}"#
    )
}

const GROUP_JSON: &str = r#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;

/// Write `bytes` to `path` as a writer replaces an object: beside it,
/// then renamed over it.
fn replace(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("writing");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The store of 20 groups of 100 arrays (`g{g}/a{a}`, array number
/// `g * 100 + a`), at `dir/wide.zarr`.
fn wide_store(dir: &Path) -> PathBuf {
    let store = dir.join("wide.zarr");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("zarr.json"), GROUP_JSON).unwrap();
    for g in 0..GROUPS {
        let group = store.join(format!("g{g}"));
        std::fs::create_dir(&group).unwrap();
        std::fs::write(group.join("zarr.json"), GROUP_JSON).unwrap();
        for a in 0..PER_GROUP {
            let array = group.join(format!("a{a}"));
            std::fs::create_dir_all(array.join("c")).unwrap();
            std::fs::write(array.join("zarr.json"), array_json(4)).unwrap();
            let chunk = zstd::bulk::compress(&values(g * PER_GROUP + a, 0, 4), 1).unwrap();
            std::fs::write(array.join("c/0"), chunk).unwrap();
        }
    }
    store
}

/// Every array's path in the mount, but `skip`.
fn arrays_but(skip: &str) -> Vec<String> {
    (0..GROUPS)
        .flat_map(|g| (0..PER_GROUP).map(move |a| format!("g{g}/a{a}")))
        .filter(|p| p != skip)
        .collect()
}

/// A file's inode number and mtime (seconds, nanoseconds).
type Seen = (u64, (i64, u32));

/// `path`'s inode number and mtime (seconds, nanoseconds) as the daemon
/// says them now (`AT_STATX_FORCE_SYNC`: not the kernel's cached
/// attributes).
fn statx(path: &Path) -> Seen {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let flags = libc::AT_STATX_FORCE_SYNC;
    let mask = libc::STATX_INO | libc::STATX_MTIME;
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), flags, mask, &mut st) };
    assert_eq!(rc, 0, "{}: {}", path.display(), std::io::Error::last_os_error());
    (st.stx_ino, (st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec))
}

/// The inode numbers and mtimes of each array's `data.bin` and
/// `header.cdl`: the same inode and the same mtime, the kernel keeps the
/// pages it holds of them (it drops them when the mtime moves).
fn inodes(mp: &Path, arrays: &[String]) -> Vec<(String, Seen, Seen)> {
    arrays
        .iter()
        .map(|a| {
            let dir = mp.join(a);
            (a.clone(), statx(&dir.join("data.bin")), statx(&dir.join("header.cdl")))
        })
        .collect()
}

/// One array of each group (`g{g}/a3`), read through the daemon
/// (`O_DIRECT`), each compared with its values.
fn read_one_per_group(m: &Mount) {
    for g in 0..GROUPS {
        let got = read_file(&m.mp.join(format!("g{g}/a3/data.bin")), true);
        assert_eq!(got, values(g * PER_GROUP + 3, 0, 4), "g{g}/a3");
    }
}

/// Read the 20 arrays again (counts `before` taken after the change and
/// the changed array's read): no decode, and hits.
fn assert_decoded_once(m: &Mount, before: (u64, u64), what: &str) {
    read_one_per_group(m);
    let after = m.cache_counts();
    assert_eq!(
        after.1,
        before.1,
        "after {what}, the other arrays were not decoded again (decodes {} -> {}): {}",
        before.1,
        after.1,
        m.log()
    );
    assert!(
        after.0 >= before.0 + GROUPS as u64,
        "they came from the cache: {before:?} -> {after:?}"
    );
}

/// Old code: a store read again from itself got a new cache (the other
/// arrays were decoded again), since a cached decode's freshness stamps
/// belonged to the dataset it was decoded in.
#[test]
fn an_append_to_one_of_2000_arrays_keeps_every_others_inodes_and_decoded_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = wide_store(dir.path());
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    read_one_per_group(&m);
    let others = arrays_but("g7/a5");
    let before = inodes(&m.mp, &others);

    let requests = |m: &Mount| {
        let status = m.status();
        let reads = status.get("store_reads").and_then(|r| r.get("requests"));
        reads.and_then(|v| v.as_u64()).unwrap()
    };
    let asked = requests(&m);
    // The append: the new chunk, then the metadata that shows it.
    let grown = store.join("g7/a5");
    let chunk = zstd::bulk::compress(&values(705, 4, 4), 1).unwrap();
    replace(&grown.join("c/1"), &chunk);
    replace(&grown.join("zarr.json"), array_json(8).as_bytes());
    let start = Instant::now();
    let data = m.mp.join("g7/a5/data.bin");
    while std::fs::metadata(&data).map(|md| md.len()).unwrap_or(0) != 32 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the append never showed: {}",
            m.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(read_file(&data, true), values(705, 0, 8), "the grown array");
    // Only the changed document was read again: the looks list the 21
    // groups each (a second apart), a read of the whole store would get
    // 2,021 documents.
    let asked = requests(&m) - asked;
    assert!(
        asked < 1_000,
        "{asked} requests from the append to its read: the store was read whole again"
    );
    let counted = m.cache_counts();

    assert_eq!(
        inodes(&m.mp, &others),
        before,
        "every other array's files are the same files, with the same times"
    );
    assert_decoded_once(&m, counted, "the append");

    // A kept decode is still checked against its object: a chunk of
    // another array replaced in the store reads new at the next open of
    // its chunk file (kept without its stamp, the old decode was served).
    replace(
        &store.join("g3/a3/c/0"),
        &zstd::bulk::compress(&values(9_999, 0, 4), 1).unwrap(),
    );
    assert_eq!(
        read_file(&m.mp.join("g3/a3/0.bin"), true),
        values(9_999, 0, 4),
        "a replaced chunk of a kept array, at the next open"
    );
}

/// Through a writable mount of a copy of the fixture repository: the 20
/// groups are committed as 20 netCDF files (each the `.nc` a read-only
/// mount of the plain store shows), then one value of `g7/a5` is written.
#[cfg(feature = "icechunk")]
#[test]
fn a_one_value_edit_of_one_of_2000_arrays_keeps_every_others_inodes_and_decoded_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = wide_store(dir.path());
    let plain = Mount::at(&store, &[]);
    let repo = dir.path().join("repo");
    common::copy_dir(&common::data_dir().join(common::repos::REPO), &repo);
    let spool = dir.path().join("spool");
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    for g in 0..GROUPS {
        let nc = plain.mp.join(format!("g{g}/g{g}.nc"));
        std::fs::copy(&nc, m.mp.join(format!("g{g}.nc"))).unwrap_or_else(|e| panic!("g{g}.nc: {e}: {}", m.log()));
    }
    drop(plain);
    read_one_per_group(&m);
    let others = arrays_but("g7/a5");
    let before = inodes(&m.mp, &others);

    let data = m.mp.join("g7/a5/data.bin");
    let f = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &f32s(&[-1.0]), 4).unwrap();
    let fd = std::os::fd::IntoRawFd::into_raw_fd(f);
    assert_eq!(unsafe { libc::close(fd) }, 0, "the edit's commit: {}", m.log());
    let mut want = values(705, 0, 4);
    want[4..8].copy_from_slice(&f32s(&[-1.0]));
    assert_eq!(read_file(&data, true), want, "the edited array");
    let counted = m.cache_counts();

    assert_eq!(
        inodes(&m.mp, &others),
        before,
        "every other array's files are the same files, with the same times"
    );
    assert_decoded_once(&m, counted, "the edit's commit");
}
