//! A local store that changes under a live mount: a chunk replaced by
//! rename, rewritten in place, or deleted is seen on the next read within
//! about a second (the views' attribute timeout), through every view the
//! kernel caches: the chunk file, `data.bin`, `data.txt` and the group's
//! `.nc`. Before, the kernel's page cache kept serving the old bytes.

mod common;

use std::path::Path;
use std::time::Duration;

use common::mount::{Mount, read_paths};

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;

fn array(dir: &Path, data_type: &str, codec: &str, fill: &str) {
    std::fs::create_dir_all(dir.join("c")).unwrap();
    let meta = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "{data_type}",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": {fill}, "codecs": [{codec}]}}"#
    );
    std::fs::write(dir.join("zarr.json"), meta).unwrap();
}

/// vlen-utf8's layout: a count, then each item's length and bytes.
fn vlen(items: &[&str]) -> Vec<u8> {
    let mut out = (items.len() as u32).to_le_bytes().to_vec();
    for i in items {
        out.extend((i.len() as u32).to_le_bytes());
        out.extend(i.as_bytes());
    }
    out
}

/// Replace `path` as writers that rename do (a new inode).
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn nc_of(mp: &Path) -> Vec<u8> {
    let nc = std::fs::read_dir(mp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "nc"))
        .expect("the root's .nc");
    std::fs::read(nc).unwrap()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

read_paths!(a_changed_chunk_is_seen_through_every_view);
fn a_changed_chunk_is_seen_through_every_view() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), GROUP).unwrap();
    array(&s.join("a"), "uint8", r#"{"name": "bytes"}"#, "0");
    std::fs::write(s.join("a/c/0"), [1u8, 2]).unwrap();
    std::fs::write(s.join("a/c/1"), [3u8, 4]).unwrap();
    array(&s.join("t"), "string", r#"{"name": "vlen-utf8"}"#, r#""""#);
    std::fs::write(s.join("t/c/0"), vlen(&["old", "ones"])).unwrap();
    std::fs::write(s.join("t/c/1"), vlen(&["x", "y"])).unwrap();
    let m = Mount::at(&s, &[]);
    let read = |rel: &str| std::fs::read(m.mp.join(rel)).unwrap();
    assert_eq!(read("a/0.bin"), [1, 2]);
    assert_eq!(read("a/data.bin"), [1, 2, 3, 4]);
    assert_eq!(read("t/data.txt"), b"old\nones\nx\ny\n");
    assert!(contains(&nc_of(&m.mp), &[1, 2, 3, 4]));
    // Twice, so that every view is in the page cache.
    assert_eq!(read("a/data.bin"), [1, 2, 3, 4]);
    assert_eq!(read("t/data.txt"), b"old\nones\nx\ny\n");

    replace(&s.join("a/c/0"), &[9, 8]);
    replace(&s.join("t/c/0"), &vlen(&["new", "ones"]));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(read("a/0.bin"), [9, 8], "the chunk file");
    assert_eq!(read("a/data.bin"), [9, 8, 3, 4], "data.bin");
    assert_eq!(read("t/data.txt"), b"new\nones\nx\ny\n", "data.txt");
    assert!(contains(&nc_of(&m.mp), &[9, 8, 3, 4]), "the .nc");

    // Rewritten in place (the same inode), and deleted (the fill).
    std::fs::write(s.join("a/c/0"), [7u8, 7]).unwrap();
    std::fs::remove_file(s.join("a/c/1")).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(read("a/0.bin"), [7, 7], "rewritten in place");
    assert_eq!(read("a/1.bin"), [0, 0], "deleted: the fill");
    assert_eq!(read("a/data.bin"), [7, 7, 0, 0], "data.bin");
    assert!(contains(&nc_of(&m.mp), &[7, 7, 0, 0]), "the .nc");
}

/// A 1-D uint8 array of 4 chunks of 64 KiB (codec `bytes`), chunk `i`
/// holding `i * 16 + fill` byte for byte.
fn wide_array(dir: &Path, fill: u8) {
    std::fs::create_dir_all(dir.join("c")).unwrap();
    std::fs::write(
        dir.join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [262144], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [65536]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
    )
    .unwrap();
    for i in 0..4u8 {
        std::fs::write(dir.join("c").join(i.to_string()), vec![i * 16 + fill; 65536]).unwrap();
    }
}

/// Read `len` bytes of `path` at `offset` with readahead off, as a random
/// reader does: only the pages asked for enter the page cache.
fn pread_random(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: a valid descriptor; fadvise changes no memory of ours.
    let rc = unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, libc::POSIX_FADV_RANDOM) };
    assert_eq!(rc, 0);
    let mut out = vec![0u8; len];
    f.read_exact_at(&mut out, offset).unwrap();
    out
}

read_paths!(a_change_found_through_one_view_drops_the_old_pages_of_the_others);
/// No torn chunk: `data.bin` holds one page of chunk 0 in the kernel's
/// cache, the object is replaced, and a read of the chunk file finds the
/// change. The next read of the whole chunk through `data.bin`, well
/// inside its attribute timeout, is all new: the page was dropped when the
/// change was found. It was the old page followed by new ones, a chunk
/// that never existed.
fn a_change_found_through_one_view_drops_the_old_pages_of_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), GROUP).unwrap();
    wide_array(&s.join("a"), 1);
    let m = Mount::at(&s, &[]);
    let data = m.mp.join("a/data.bin");
    for round in 0..3u8 {
        let old = round * 50 + 1;
        let new = old + 50;
        assert_eq!(pread_random(&data, 4096, 4096), vec![old; 4096], "round {round}");
        replace(&s.join("a/c/0"), &vec![new; 65536]);
        assert_eq!(
            std::fs::read(m.mp.join("a/0.bin")).unwrap(),
            vec![new; 65536],
            "round {round}"
        );
        let chunk = pread_random(&data, 0, 65536);
        let old_bytes = chunk.iter().filter(|&&b| b == old).count();
        assert_eq!(
            old_bytes, 0,
            "round {round}: {old_bytes} old bytes in a chunk read after the change"
        );
        assert_eq!(chunk, vec![new; 65536], "round {round}");
        // Past the attribute timeout, as the next round starts afresh.
        std::thread::sleep(Duration::from_millis(1100));
    }
}
