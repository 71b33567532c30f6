//! Through real mounts: stores built to blow up memory or time
//! cost a mount no more than `--cache-size` plus a stated constant, and
//! answer within seconds (EIO where they cannot be read).

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::mount::{Mount, read_paths, vm_hwm};

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
/// What a mount may hold beyond its cache: the binary, its threads' stacks,
/// the parsed metadata of a small store, one read's buffers.
const OVERHEAD: u64 = 64 << 20;
const CACHE: u64 = 16 << 20;

fn array(path: &Path, meta: &str) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::write(path.join("zarr.json"), meta).unwrap();
}

/// A `uint8` array of one shard of `len` elements, `inner` per inner chunk,
/// its index at the end.
fn sharded(len: u64, inner: u64) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{len}], "data_type": "uint8",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{len}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "sharding_indexed", "configuration": {{"chunk_shape": [{inner}],
          "codecs": [{{"name": "bytes"}}], "index_codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
          "index_location": "end"}}}}]}}"#
    )
}

fn assert_bounded(m: &Mount, what: &str) {
    let hwm = vm_hwm(m.daemon_pid());
    assert!(
        hwm < CACHE + OVERHEAD,
        "{what}: daemon peak RSS {} MiB with a {} MiB cache",
        hwm >> 20,
        CACHE >> 20
    );
}

read_paths!(an_absent_huge_chunk_costs_only_what_is_read);
/// An absent chunk of 2^30 int16 elements (2 GiB) in an array of one
/// element: `data.bin`, the chunk file and the `.nc` (through ncdump) read
/// the fill without building the chunk. One array fills with 7, one with 0
/// (the sparse path of passthrough).
fn an_absent_huge_chunk_costs_only_what_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    for (name, fill) in [("seven", 7), ("zero", 0)] {
        let meta = format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "int16",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [1073741824]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": {fill},
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}"#
        );
        array(&s.join(name), &meta);
    }
    let m = Mount::at(&s, &["--cache-size", "16MiB"]);
    let t = Instant::now();
    for (name, fill) in [("seven", 7i16), ("zero", 0)] {
        let data = std::fs::read(m.mp.join(name).join("data.bin")).unwrap();
        assert_eq!(data, fill.to_ne_bytes(), "{name}/data.bin");
        // The chunk file is 2 GiB of fill: its first and last pages.
        let f = std::fs::File::open(m.mp.join(name).join("0.bin")).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 2 << 30);
        for at in [0, (2 << 30) - 4096] {
            let mut page = vec![0xAAu8; 4096];
            f.read_exact_at(&mut page, at).unwrap();
            assert!(page.chunks(2).all(|e| e == fill.to_ne_bytes()), "{name}/0.bin at {at}");
        }
    }
    let nc = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "nc"))
        .unwrap();
    let out = Command::new("ncdump").arg(&nc).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ncdump: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("seven = 7 ;") && text.contains("zero = 0 ;"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert_bounded(&m, "absent 2 GiB chunks");
}

read_paths!(a_shard_index_of_a_gigabyte_is_refused_before_it_is_read);
/// A shard whose configuration claims 2^26 inner chunks (a 1 GiB index),
/// stored as a sparse file of that size: refused from its metadata, before
/// anything is allocated, with the reason in the log; the rest of the
/// mount reads.
fn a_shard_index_of_a_gigabyte_is_refused_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    array(&s.join("big"), &sharded(1 << 26, 1));
    std::fs::create_dir_all(s.join("big/c")).unwrap();
    let f = std::fs::File::create(s.join("big/c/0")).unwrap();
    f.set_len((1 << 26) * 16 + 4096).unwrap();
    let small = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 3, "codecs": [{"name": "bytes"}]}"#;
    array(&s.join("small"), small);

    let m = Mount::at(&s, &["--cache-size", "16MiB"]);
    let t = Instant::now();
    for f in ["big/data.bin", "big/0.bin"] {
        let mut one = [0u8; 1];
        let r = std::fs::File::open(m.mp.join(f)).and_then(|f| f.read_exact_at(&mut one, 0));
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO), "{f}");
    }
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    assert_eq!(std::fs::read(m.mp.join("small/data.bin")).unwrap(), [3; 4]);
    let log = m.log();
    assert!(log.contains("67108864 inner chunks per shard"), "{log}");
    assert_bounded(&m, "a 1 GiB shard index");
}

read_paths!(a_shard_shorter_than_its_index_says_so);
/// A shard object shorter than its index: the message says so.
fn a_shard_shorter_than_its_index_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    array(&s.join("a"), &sharded(8, 2));
    std::fs::create_dir_all(s.join("a/c")).unwrap();
    std::fs::write(s.join("a/c/0"), [0u8; 10]).unwrap();
    let m = Mount::at(&s, &[]);
    let r = std::fs::read(m.mp.join("a/data.bin"));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
    let log = m.log();
    assert!(
        log.contains("a/c/0")
            && log.contains("the shard is 10 bytes, shorter than its index (64 bytes for 4 inner chunks)"),
        "{log}"
    );
}

#[repr(align(4096))]
struct Page([u8; 4096]);

/// A read with `O_DIRECT`: past the kernel's page cache, to the daemon.
fn read_direct(path: &Path) -> Vec<u8> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    let mut page = Box::new(Page([0; 4096]));
    let n = f.read_at(&mut page.0, 0).unwrap();
    page.0[..n].to_vec()
}

read_paths!(a_replaced_or_deleted_chunk_is_not_served_from_the_cache);
/// A chunk read, then replaced by a rename, then deleted:
/// fresh reads past the page cache show the new bytes, then the fill
/// (what zarr-python reads at each step), within `RECHECK_AFTER`.
fn a_replaced_or_deleted_chunk_is_not_served_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [64], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 9, "codecs": [{"name": "bytes"}]}"#;
    array(&s.join("a"), meta);
    std::fs::create_dir_all(s.join("a/c")).unwrap();
    let old: Vec<u8> = (0..64).collect();
    let new: Vec<u8> = (100..164).collect();
    std::fs::write(s.join("a/c/0"), &old).unwrap();
    let m = Mount::at(&s, &[]);
    let files = [m.mp.join("a/0.bin"), m.mp.join("a/data.bin")];
    for f in &files {
        assert_eq!(read_direct(f), old, "{}", f.display());
    }
    std::fs::write(s.join("a/c/0.tmp"), &new).unwrap();
    std::fs::rename(s.join("a/c/0.tmp"), s.join("a/c/0")).unwrap();
    std::thread::sleep(nzfs::array::RECHECK_AFTER + Duration::from_millis(100));
    for f in &files {
        assert_eq!(read_direct(f), new, "{} after the rename", f.display());
    }
    std::fs::remove_file(s.join("a/c/0")).unwrap();
    std::thread::sleep(nzfs::array::RECHECK_AFTER + Duration::from_millis(100));
    for f in &files {
        assert_eq!(read_direct(f), [9; 64], "{} after the delete", f.display());
    }
    // And the chunk comes back.
    std::fs::write(s.join("a/c/0"), &old).unwrap();
    std::thread::sleep(nzfs::array::RECHECK_AFTER + Duration::from_millis(100));
    assert_eq!(read_direct(&files[0]), old);
}

read_paths!(odd_fills_and_huge_shapes_give_clear_errors);
/// A float32 fill of the wrong width is refused (not served
/// as a denormal), huge shapes leave the `.nc` with the reason instead of
/// wrapping its layout, and a `data.bin` past 2^63 bytes is an `EIO` with
/// a log line.
fn odd_fills_and_huge_shapes_give_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let arr = |shape: u64, chunk: u64, dt: &str, fill: &str| {
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}], "data_type": "{dt}",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{chunk}]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": {fill},
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}"#
        )
    };
    array(&s.join("short_hex"), &arr(4, 4, "float32", r#""0x7fc0""#));
    array(&s.join("nan"), &arr(4, 4, "float32", r#""0x7fc00000""#));
    array(&s.join("huge"), &arr(1 << 59, 1 << 28, "float64", "0"));
    array(&s.join("past_i64"), &arr(1 << 61, 1 << 28, "float64", "0"));
    array(&s.join("small"), &arr(2, 2, "int32", "5"));
    let m = Mount::at(&s, &[]);
    // The wrong width: unreadable; the full width: NaN, as zarr-python reads it.
    let r = std::fs::read(m.mp.join("short_hex/data.bin"));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
    let nan = std::fs::read(m.mp.join("nan/data.bin")).unwrap();
    assert!(
        nan.chunks(4)
            .all(|b| f32::from_ne_bytes(b.try_into().unwrap()).is_nan())
    );
    // 2^59 float64 is a 4 EiB data.bin; past 2^63 bytes it cannot be stat'ed.
    assert_eq!(std::fs::metadata(m.mp.join("huge/data.bin")).unwrap().len(), 1 << 62);
    let r = std::fs::metadata(m.mp.join("past_i64/data.bin"));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
    // The .nc holds `small` and names the others, with reasons.
    let nc = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "nc"))
        .unwrap();
    let out = Command::new("ncdump").arg(&nc).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ncdump: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("small = 5, 5 ;"), "{text}");
    assert!(!text.contains("UNLIMITED"), "{text}");
    for name in ["huge", "past_i64"] {
        assert!(text.contains(&format!("{name}: larger than a netCDF file")), "{text}");
    }
    let log = m.log();
    assert!(log.contains("short_hex") && log.contains("0x7fc0"), "{log}");
    assert!(
        log.contains("past_i64: data.bin would be 18446744073709551616 bytes"),
        "{log}"
    );
}

/// `null_terminated_bytes[100]`, `shape`, `chunks`, filled with `fill`.
fn text_array(shape: &str, chunks: &str, fill: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape},
        "data_type": {{"name": "null_terminated_bytes", "configuration": {{"length_bytes": 100}}}},
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunks}}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": "{fill}", "codecs": [{{"name": "bytes"}}]}}"#
    )
}

read_paths!(data_txt_is_never_held_whole);
/// `ls -lR` of four arrays of 2,000,000 99-character values
/// (800 MB of text, 120 KiB of store) and a whole read of one `data.txt`
/// stay within the cache plus the constant; the text is right.
fn data_txt_is_never_held_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let fill = "eHh4".repeat(33); // base64 of 99 x's, as zarr-python writes |S fills
    for a in ["a", "b", "c", "d"] {
        array(&s.join(a), &text_array("[2000000]", "[100000]", &fill));
    }
    let m = Mount::at(&s, &["--cache-size", "16MiB"]);
    let out = Command::new("ls").arg("-lR").arg(&m.mp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for a in ["a", "b", "c", "d"] {
        assert_eq!(
            std::fs::metadata(m.mp.join(a).join("data.txt")).unwrap().len(),
            200_000_000
        );
    }
    assert_bounded(&m, "ls -lR of 800 MB of text");
    // A whole read, in cat's pieces: every line is the fill.
    let mut f = std::fs::File::open(m.mp.join("a/data.txt")).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let (mut total, mut lines) = (0u64, 0u64);
    loop {
        let n = std::io::Read::read(&mut f, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(buf[..n].iter().all(|&b| b == b'x' || b == b'\n'));
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        total += n as u64;
    }
    assert_eq!((total, lines), (200_000_000, 2_000_000));
    assert_bounded(&m, "a whole read of a 200 MB data.txt");
}

read_paths!(data_txt_reads_in_pieces_match_the_values);
/// `data.txt` read in pieces that start and end anywhere, of 2-d arrays
/// with edge chunks, some chunks absent, fixed and variable length: the
/// lines in C order, each element's value as written.
fn data_txt_reads_in_pieces_match_the_values() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let (rows, cols, cr, cc) = (50u64, 61u64, 7u64, 11u64);
    let value = |r: u64, c: u64| format!("v{r}.{c}{}", "#".repeat(((r * 7 + c) % 13) as usize));
    let mut expected = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let absent = (r / cr + c / cc) % 5 == 0;
            let v = if absent { "fill".to_string() } else { value(r, c) };
            expected.extend_from_slice(v.as_bytes());
            expected.push(b'\n');
        }
    }
    let fixed = text_array(&format!("[{rows}, {cols}]"), &format!("[{cr}, {cc}]"), "ZmlsbA=="); // "fill"
    array(&s.join("fixed"), &fixed);
    let vlen = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{rows}, {cols}], "data_type": "string",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{cr}, {cc}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": "fill", "codecs": [{{"name": "vlen-utf8"}}]}}"#
    );
    array(&s.join("vlen"), &vlen);
    for gr in 0..rows.div_ceil(cr) {
        for gc in 0..cols.div_ceil(cc) {
            if (gr + gc) % 5 == 0 {
                continue;
            }
            let (mut fixed_chunk, mut vlen_chunk) = (Vec::new(), ((cr * cc) as u32).to_le_bytes().to_vec());
            for lr in 0..cr {
                for lc in 0..cc {
                    // Elements past the edge hold anything: here, their own names.
                    let v = value(gr * cr + lr, gc * cc + lc);
                    let mut padded = v.clone().into_bytes();
                    padded.resize(100, 0);
                    fixed_chunk.extend(padded);
                    vlen_chunk.extend((v.len() as u32).to_le_bytes());
                    vlen_chunk.extend(v.as_bytes());
                }
            }
            for (a, bytes) in [("fixed", &fixed_chunk), ("vlen", &vlen_chunk)] {
                let dir = s.join(a).join("c").join(gr.to_string());
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(gc.to_string()), bytes).unwrap();
            }
        }
    }
    let m = Mount::at(&s, &["--cache-size", "64KiB"]);
    for a in ["fixed", "vlen"] {
        let path = m.mp.join(a).join("data.txt");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), expected.len() as u64, "{a}");
        assert_eq!(std::fs::read(&path).unwrap(), expected, "{a}");
        let f = std::fs::File::open(&path).unwrap();
        let mut at = 0u64;
        let mut step = 1u64;
        while at < expected.len() as u64 {
            let mut piece = vec![0u8; step as usize];
            let n = f.read_at(&mut piece, at).unwrap();
            let want = &expected[at as usize..(at as usize + step as usize).min(expected.len())];
            assert_eq!(&piece[..n], want, "{a} at {at}, {step} bytes");
            at += step;
            step = step * 3 % 9973 + 1;
        }
    }
}

read_paths!(a_replaced_chunk_shows_at_the_next_open_with_passthrough);
/// At an open: with passthrough on (root), opens reach the
/// daemon, and a chunk file replaced in the store reads its new bytes at
/// the next open, without waiting for `RECHECK_AFTER` (the decode, the
/// unopened backing and the kernel's pages are dropped there).
fn a_replaced_chunk_shows_at_the_next_open_with_passthrough() {
    if unsafe { libc::geteuid() } != 0 {
        return; // passthrough needs CAP_SYS_ADMIN
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [64], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 9, "codecs": [{"name": "bytes"}]}"#;
    array(&s.join("a"), meta);
    std::fs::create_dir_all(s.join("a/c")).unwrap();
    let (old, new): (Vec<u8>, Vec<u8>) = ((0..64).collect(), (100..164).collect());
    std::fs::write(s.join("a/c/0"), &old).unwrap();
    let m = Mount::at(&s, &["--passthrough", "always"]);
    let chunk = m.mp.join("a/0.bin");
    assert_eq!(std::fs::read(&chunk).unwrap(), old);
    std::fs::write(s.join("a/c/0.tmp"), &new).unwrap();
    std::fs::rename(s.join("a/c/0.tmp"), s.join("a/c/0")).unwrap();
    assert_eq!(std::fs::read(&chunk).unwrap(), new, "at once, at the next open");
}

read_paths!(big_attributes_are_kept_within_a_bound_and_named);
/// Eight arrays whose `zarr.json` carries 20 MB of attributes each (one
/// huge list, or a quarter of a million small members): the mount keeps
/// 1 MiB of each node's attributes and names the rest, so `ls -la`, the
/// headers and the `.nc` cost no more than the cache and 256 MiB, and every
/// array still reads.
fn big_attributes_are_kept_within_a_bound_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    array(&s, GROUP);
    let list: Vec<String> = (0..2_500_000).map(|k| k.to_string()).collect();
    let members: Vec<String> = (0..1_000_000).map(|k| format!(r#""key_{k}": {k}"#)).collect();
    for i in 0..8 {
        let big = if i % 2 == 0 {
            format!(r#""units": "K", "values": [{}]"#, list.join(", "))
        } else {
            format!(r#""units": "K", {}"#, members.join(", "))
        };
        assert!(big.len() > 18_000_000, "{}", big.len());
        let meta = format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int16",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": {i},
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
            "attributes": {{{big}}}}}"#
        );
        array(&s.join(format!("a{i}")), &meta);
    }
    let m = Mount::at(&s, &["--cache-size", "16MiB"]);
    let listing = Command::new("ls").arg("-la").arg(&m.mp).output().unwrap();
    assert!(listing.status.success());
    let group = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    let nc = std::fs::metadata(m.mp.join("s.nc")).unwrap().len();
    let hwm = vm_hwm(m.daemon_pid());
    assert!(
        hwm < CACHE + (256 << 20),
        "daemon peak RSS {} MiB with a {} MiB cache (header.cdl {} and s.nc {nc} bytes)",
        hwm >> 20,
        CACHE >> 20,
        group.len()
    );
    for i in 0..8 {
        let dir = m.mp.join(format!("a{i}"));
        let data = std::fs::read(dir.join("data.bin")).unwrap();
        assert_eq!(
            data,
            [(i as i16).to_ne_bytes(), (i as i16).to_ne_bytes()].concat(),
            "a{i}"
        );
        let header = std::fs::read_to_string(dir.join("header.cdl")).unwrap();
        assert!(header.contains(&format!("a{i}:units = \"K\" ;")), "a{i}");
        let named = if i % 2 == 0 { "values: " } else { " more: " };
        let note = header
            .lines()
            .find(|l| l.contains("_nz_omitted_attributes"))
            .unwrap_or_else(|| panic!("a{i}: no note of what was left out"));
        assert!(
            note.contains(named) && note.contains("bytes of JSON left out"),
            "{note}"
        );
        assert!(header.len() < 4 << 20, "a{i}/header.cdl is {} bytes", header.len());
    }
    assert!(
        group.contains("a7:_nz_omitted_attributes"),
        "every array is in the group's header"
    );
    let out = Command::new("ncdump")
        .arg("-h")
        .arg(m.mp.join("s.nc"))
        .output()
        .unwrap();
    assert!(out.status.success(), "ncdump: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a0:_nz_omitted_attributes"));
    assert!(
        vm_hwm(m.daemon_pid()) < CACHE + (256 << 20),
        "after the headers and ncdump"
    );
}
