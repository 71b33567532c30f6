//! Golden tests without FUSE: every fixture array, read chunk by chunk
//! through the filesystem core, equals what zarr-python/numpy decoded.

mod common;

use std::ffi::OsStr;
use std::time::SystemTime;

use nzfs::fs::{FsConfig, MissingChunks, NzFs};
use nzfs::store::FilesystemStore;
use nzfs::zarr::hierarchy::Hierarchy;

fn open(store: &str, missing: MissingChunks) -> NzFs {
    let path = common::data_dir().join(store);
    let s = FilesystemStore::new(&path);
    let h = Hierarchy::open(&s).unwrap_or_else(|e| panic!("{store}: {e}"));
    let options = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: missing,
        dataset_name: store.trim_end_matches(".zarr").into(),
        uid: 0,
        gid: 0,
        mtime: SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    NzFs::new(Box::new(s), h, options).unwrap()
}

/// Walk `path` from the root by directory names.
fn resolve(fs: &NzFs, path: &str) -> u64 {
    let mut ino = 1;
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let name = if seg == "header.cdl" { "header.cdl.node" } else { seg };
        ino = fs
            .lookup(ino, OsStr::new(name))
            .unwrap_or_else(|e| panic!("{path}: {name}: {e}"))
            .ino;
    }
    ino
}

/// The first 8 bytes of file `name` in directory `dir`.
fn read8(fs: &NzFs, dir: u64, name: &str) -> Result<Vec<u8>, nzfs::fs::FsError> {
    let ino = fs.lookup(dir, OsStr::new(name))?.ino;
    Ok(fs.read(ino, 0, 8)?.bytes().to_vec())
}

fn two_i32(a: i32, b: i32) -> Vec<u8> {
    [a.to_ne_bytes(), b.to_ne_bytes()].concat()
}

#[test]
fn every_fixture_chunk_matches_numpy() {
    let manifest = common::manifest();
    assert!(manifest.len() > 50, "the manifest lists {} arrays", manifest.len());
    let mut chunks = 0;
    for store in common::stores(&manifest) {
        let fs = open(&store, MissingChunks::Fill);
        for e in manifest.iter().filter(|e| e.store == store) {
            let dir = resolve(&fs, &e.path);
            let listed: Vec<String> = fs
                .readdir(dir, 0, usize::MAX)
                .unwrap()
                .into_iter()
                .map(|d| d.name)
                .filter(|n| n.ends_with(".bin") && n != "data.bin")
                .collect();
            let want: Vec<String> = (0..e.chunk_count()).map(|i| e.chunk_name(i)).collect();
            assert_eq!(listed, want, "{store}/{}", e.path);
            for (i, name) in want.iter().enumerate() {
                let attr = fs.lookup(dir, OsStr::new(name)).unwrap();
                let data = fs.read(attr.ino, 0, u32::MAX).unwrap();
                assert_eq!(attr.size, data.bytes().len() as u64);
                e.check_chunk(i as u64, data.bytes()).unwrap();
                chunks += 1;
            }
        }
    }
    assert!(chunks > 300, "compared {chunks} chunks");
}

#[test]
fn absent_chunks_hold_the_fill_value_everywhere() {
    let manifest = common::manifest();
    let mut checked = 0;
    for e in manifest.iter().filter(|e| e.fill.is_some()) {
        let fs = open(&e.store, MissingChunks::Fill);
        let dir = resolve(&fs, &e.path);
        // The last chunk of every fill fixture is absent from the store.
        let last = e.chunk_count() - 1;
        let attr = fs.lookup(dir, OsStr::new(&e.chunk_name(last))).unwrap();
        let data = fs.read(attr.ino, 0, u32::MAX).unwrap();
        let fill = e.fill.as_ref().unwrap();
        for (k, item) in data.bytes().chunks(fill.len()).enumerate() {
            assert_eq!(item, &fill[..], "{}/{} element {k}", e.store, e.path);
        }
        checked += 1;
    }
    assert!(checked >= 12, "checked {checked} fill forms");
}

#[test]
fn reads_at_any_offset_and_size_are_slices_of_one_decode() {
    let fs = open("sample.zarr", MissingChunks::Fill);
    let dir = resolve(&fs, "t2m");
    let ino = fs.lookup(dir, OsStr::new("1.1.1.bin")).unwrap().ino;
    let whole = fs.read(ino, 0, u32::MAX).unwrap().bytes().to_vec();
    let decodes = fs.cache().stats.decodes.load(std::sync::atomic::Ordering::Relaxed);
    for (off, len) in [
        (0, 1),
        (3, 5),
        (100, 4096),
        (whole.len() as u64 - 3, 100),
        (whole.len() as u64, 10),
    ] {
        let part = fs.read(ino, off, len).unwrap();
        let start = (off as usize).min(whole.len());
        let end = (start + len as usize).min(whole.len());
        assert_eq!(part.bytes(), &whole[start..end]);
    }
    assert_eq!(
        fs.cache().stats.decodes.load(std::sync::atomic::Ordering::Relaxed),
        decodes
    );
}

#[test]
fn missing_chunks_error_mode() {
    let fs = open("fills.zarr", MissingChunks::Error);
    let dir = resolve(&fs, "nan");
    let present = fs.lookup(dir, OsStr::new("0.0.bin")).unwrap().ino;
    assert!(fs.read(present, 0, 10).is_ok());
    let absent = fs.lookup(dir, OsStr::new("2.1.bin")).unwrap().ino;
    let err = fs.read(absent, 0, 10).unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(
        err.to_string().contains("fills.zarr") || err.to_string().contains("nan/c/2/1"),
        "{err}"
    );
}

/// An array with a codec nzfs does not know keeps its directory
/// and a header that describes it (and says why its values cannot be
/// read); its data files are listed, and reading one is EIO naming the
/// codec.
fn undecodable_but_described(fs: &NzFs, name: &str, codec: &str) {
    let dir = resolve(fs, name);
    fs.opendir(dir).unwrap();
    let names: Vec<String> = fs.readdir(dir, 0, 100).unwrap().into_iter().map(|e| e.name).collect();
    assert!(
        names.iter().any(|n| n == "data.bin") && names.iter().any(|n| n.ends_with(".bin")),
        "{names:?}"
    );
    let header = fs.lookup(dir, OsStr::new("header.cdl")).unwrap();
    let text = String::from_utf8(fs.read(header.ino, 0, 1 << 20).unwrap().bytes().to_vec()).unwrap();
    assert!(
        text.contains("variables:") && text.contains("cannot be decoded") && text.contains(codec),
        "{text}"
    );
    let err = read8(fs, dir, "data.bin").unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(
        err.to_string().contains(name) && err.to_string().contains(codec),
        "{err}"
    );
}

#[test]
fn refused_nodes_fail_with_eio_and_the_rest_reads() {
    let fs = open("bad.zarr", MissingChunks::Fill);
    for name in ["unknown_field", "unknown_transformer", "bad_fill", "truncated"] {
        let attr = fs.lookup(1, OsStr::new(name)).unwrap();
        let err = fs.opendir(attr.ino).unwrap_err();
        assert_eq!(err.errno(), libc::EIO, "{name}");
        assert!(err.to_string().contains(name), "{err}");
    }
    undecodable_but_described(&fs, "unknown_codec", "mystery");
    let crc = resolve(&fs, "bad_crc");
    assert_eq!(read8(&fs, crc, "0.bin").unwrap(), two_i32(5, 6));
    let err = read8(&fs, crc, "1.bin").unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(
        err.to_string().contains("bad_crc/c/1") && err.to_string().contains("checksum"),
        "{err}"
    );
    assert_eq!(read8(&fs, resolve(&fs, "good"), "1.bin").unwrap(), two_i32(3, 4));
}

#[test]
fn layout_rules() {
    let fs = open("hier.zarr", MissingChunks::Fill);
    let root: Vec<String> = fs
        .readdir(1, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(
        root,
        [
            ".",
            "..",
            "header.cdl",
            "hier.nc",
            "index.html",
            "empty",
            "header.cdl.node",
            "implicit",
            "scalar",
            "sub"
        ]
    );
    let empty = resolve(&fs, "empty");
    let names: Vec<String> = fs
        .readdir(empty, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, [".", "..", "header.cdl", "data.bin"]);
    assert_eq!(fs.lookup(empty, OsStr::new("data.bin")).unwrap().size, 0);
    let scalar = resolve(&fs, "scalar");
    assert_eq!(fs.lookup(scalar, OsStr::new("0.bin")).unwrap().size, 4);
    // Non-canonical chunk names do not resolve.
    let edge = resolve(&fs, "sub/deep/edge");
    assert!(fs.lookup(edge, OsStr::new("0.0.bin")).is_ok());
    assert!(fs.lookup(edge, OsStr::new("00.0.bin")).is_err());
    assert!(fs.lookup(edge, OsStr::new("3.0.bin")).is_err());
    // Directory listings resume at any offset.
    let all = fs.readdir(edge, 0, usize::MAX).unwrap();
    let tail = fs.readdir(edge, all[4].next_offset, 2).unwrap();
    assert_eq!(tail, all[5..7]);
    // Consolidated metadata is the hierarchy: a node written later is not listed.
    let c = open("consolidated.zarr", MissingChunks::Fill);
    assert!(c.lookup(1, OsStr::new("not_consolidated")).is_err());
    assert!(c.lookup(1, OsStr::new("grp")).is_ok());
}

#[test]
fn data_bin_is_the_whole_array_at_any_offset() {
    let manifest = common::manifest();
    let mut checked = 0;
    for store in common::stores(&manifest) {
        let fs = open(&store, MissingChunks::Fill);
        for e in manifest.iter().filter(|e| e.store == store) {
            let dir = resolve(&fs, &e.path);
            let attr = fs.lookup(dir, OsStr::new("data.bin")).unwrap();
            let want_len = if e.shape.is_empty() {
                e.bytes.len()
            } else {
                e.elements() as usize * e.item_size()
            };
            assert_eq!(attr.size, want_len as u64, "{store}/{}", e.path);
            assert_eq!(
                fs.read(attr.ino, 0, u32::MAX).unwrap().bytes(),
                &e.bytes[..],
                "{store}/{}",
                e.path
            );
            // Odd-sized pieces at odd offsets, across rows and chunks.
            let mut got = Vec::new();
            let mut off = 0u64;
            let mut step = 1u32;
            while off < attr.size {
                let part = fs.read(attr.ino, off, step).unwrap();
                got.extend_from_slice(part.bytes());
                off += part.bytes().len() as u64;
                step = step * 3 % 1021 + 1;
            }
            assert_eq!(got, e.bytes, "{store}/{} in pieces", e.path);
            checked += 1;
        }
    }
    assert!(checked > 100, "checked {checked} arrays");
}

#[test]
fn a_sequential_reader_gets_the_next_chunks_decoded_ahead() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let fs = Arc::new(open("sample.zarr", MissingChunks::Fill));
    fs.start_prefetcher();
    let dir = resolve(&fs, "t2m");
    // Start chunk files 0 and 1 (grid C order): a sequential run.
    for name in ["0.0.0.bin", "0.0.1.bin"] {
        let ino = fs.lookup(dir, OsStr::new(name)).unwrap().ino;
        fs.read(ino, 0, 16).unwrap();
    }
    // t2m has 8 chunks of 1,400 bytes: the run's first window (1 MiB worth,
    // at most 64 chunks) covers the other 6, which are decoded without
    // being read. Waiting for all 8 leaves no prefetch decode in flight to
    // race the reads below (waiting for 6 did: a worker's decode of 1.1.x
    // was counted while 1.0.1 was read).
    let start = std::time::Instant::now();
    while fs.cache().stats.decodes.load(Ordering::Relaxed) < 8 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "prefetch never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Reading them now hits the cache: no further decode.
    for name in ["0.1.0.bin", "0.1.1.bin", "1.0.0.bin", "1.0.1.bin"] {
        let ino = fs.lookup(dir, OsStr::new(name)).unwrap().ino;
        let before = fs.cache().stats.decodes.load(Ordering::Relaxed);
        fs.read(ino, 8, 16).unwrap();
        assert_eq!(
            fs.cache().stats.decodes.load(Ordering::Relaxed),
            before,
            "{name} decoded again"
        );
    }
}

#[test]
fn refused_v2_nodes_fail_with_eio_and_the_rest_reads() {
    let fs = open("v2_bad.zarr", MissingChunks::Fill);
    let attr = fs.lookup(1, OsStr::new("bad_json")).unwrap();
    let err = fs.opendir(attr.ino).unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(
        err.to_string().contains("bad_json") && err.to_string().contains(".zarray"),
        "{err}"
    );
    undecodable_but_described(&fs, "unknown_codec", "numcodecs.mystery");
    for (name, why) in [
        ("short_chunk", "short_chunk/1"),
        ("bad_crc32", "crc32: checksum mismatch"),
    ] {
        let dir = resolve(&fs, name);
        assert_eq!(read8(&fs, dir, "0.bin").unwrap(), two_i32(1, 2));
        let err = read8(&fs, dir, "1.bin").unwrap_err();
        assert_eq!(err.errno(), libc::EIO, "{name}");
        assert!(err.to_string().contains(why) && err.to_string().contains(name), "{err}");
    }
    assert_eq!(read8(&fs, resolve(&fs, "good"), "1.bin").unwrap(), two_i32(3, 4));
}

#[test]
fn arrays_of_unknown_types_hold_only_a_header_that_ncgen_accepts() {
    for (store, name, why) in [
        ("v2_bad.zarr", "structured", "variable-length"),
        ("strings_v3.zarr", "mystery", "float7_e3m3"),
    ] {
        let fs = open(store, MissingChunks::Fill);
        let dir = fs.lookup(1, OsStr::new(name)).unwrap().ino;
        fs.opendir(dir).unwrap();
        let names: Vec<String> = fs
            .readdir(dir, 0, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, [".", "..", "header.cdl"]);
        let h = fs.lookup(dir, OsStr::new("header.cdl")).unwrap();
        let text = String::from_utf8(fs.read(h.ino, 0, u32::MAX).unwrap().bytes().to_vec()).unwrap();
        assert!(text.contains(why), "{text}");
        let err = fs.lookup(dir, OsStr::new("data.bin")).unwrap_err();
        assert_eq!(err.errno(), libc::EIO);
        assert!(err.to_string().contains(why), "{err}");
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("h.cdl"), &text).unwrap();
        let out = std::process::Command::new("ncgen")
            .args(["-k", "nc4", "-o"])
            .arg(tmp.path().join("h.nc"))
            .arg(tmp.path().join("h.cdl"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{text}: {}", String::from_utf8_lossy(&out.stderr));
        // The group's own header stays valid CDL (checked for every store
        // by tests/cdl.rs) and names the array as unreadable.
        let root = fs.lookup(1, OsStr::new("header.cdl")).unwrap();
        let group = String::from_utf8(fs.read(root.ino, 0, u32::MAX).unwrap().bytes().to_vec()).unwrap();
        assert!(group.contains(&format!("node \"{name}\" is unreadable")), "{group}");
    }
}

#[test]
fn string_arrays_read_as_text_equal_to_zarr_python() {
    let manifest = common::text_manifest();
    assert!(manifest.len() >= 9, "{} text arrays", manifest.len());
    let mut chunk_files = 0;
    for e in &manifest {
        let fs = open(&e.store, MissingChunks::Fill);
        let dir = resolve(&fs, &e.path);
        let attr = fs.lookup(dir, OsStr::new("data.txt")).unwrap();
        let got = fs.read(attr.ino, 0, u32::MAX).unwrap();
        assert_eq!(attr.size, e.text.len() as u64, "{}/{}", e.store, e.path);
        assert_eq!(
            String::from_utf8_lossy(got.bytes()),
            String::from_utf8_lossy(&e.text),
            "{}/{}",
            e.store,
            e.path
        );
        let names: Vec<String> = fs
            .readdir(dir, 0, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        // Variable-length arrays have .txt chunks and no data.bin.
        assert_eq!(
            names.contains(&"data.bin".to_string()),
            e.chunks.is_empty(),
            "{names:?}"
        );
        for (linear, want) in &e.chunks {
            let name = names
                .iter()
                .filter(|n| n.ends_with(".txt") && *n != "data.txt")
                .nth(*linear as usize)
                .unwrap();
            let attr = fs.lookup(dir, OsStr::new(name)).unwrap();
            assert_eq!(attr.size, want.len() as u64, "{}/{}/{name}", e.store, e.path);
            assert_eq!(fs.read(attr.ino, 0, u32::MAX).unwrap().bytes(), &want[..], "{name}");
            chunk_files += 1;
        }
    }
    assert!(chunk_files >= 12, "compared {chunk_files} chunk files");
}
