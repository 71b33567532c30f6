//! Real-mount tests: the `nzfs` binary mounts fixtures through /dev/fuse and
//! fusermount3, and the tests read them with `std::fs` like any program.
//! They need FUSE (install fuse3) and, for headers, `ncgen`/`ncdump`
//! (netcdf-bin); they fail, not skip, when those are missing.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::mount::{Mount, mmap_bytes, nzfs, read_paths};

read_paths!(every_fixture_reads_back_exactly_through_a_real_mount);
fn every_fixture_reads_back_exactly_through_a_real_mount() {
    let manifest = common::manifest();
    let mut files = 0;
    for store in common::stores(&manifest) {
        let m = Mount::new(&store, &["--cache-size", "64KiB"]);
        for e in manifest.iter().filter(|e| e.store == store) {
            let dir = m.path(&e.path);
            let names: Vec<String> = std::fs::read_dir(&dir)
                .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
                .map(|d| d.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".bin") && n != "data.bin")
                .collect();
            let want: Vec<String> = (0..e.chunk_count()).map(|i| e.chunk_name(i)).collect();
            assert_eq!(names, want, "{store}/{}", e.path);
            for (i, name) in want.iter().enumerate() {
                let file = dir.join(name);
                let size = std::fs::metadata(&file).unwrap().len();
                let bytes = std::fs::read(&file).unwrap();
                assert_eq!(size, bytes.len() as u64, "{}", file.display());
                e.check_chunk(i as u64, &bytes).unwrap();
                files += 1;
            }
        }
    }
    assert!(files > 300, "read {files} chunk files");
}

fn walk_headers(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            if std::fs::read_dir(&path).is_ok() {
                walk_headers(&path, out);
            }
        } else if entry.file_name() == "header.cdl" {
            out.push(path);
        }
    }
}

read_paths!(every_header_is_cdl_that_ncgen_accepts);
fn every_header_is_cdl_that_ncgen_accepts() {
    let manifest = common::manifest();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for store in common::stores(&manifest) {
        let m = Mount::new(&store, &[]);
        let mut headers = Vec::new();
        walk_headers(&m.mp, &mut headers);
        for h in headers {
            let nc = tmp.path().join(format!("h{checked}.nc"));
            common::netcdf_tools::ncgen(&h, &nc);
            // ncdump reads the file back and names the same variables.
            let dump = common::netcdf_tools::ncdump(&["-h"], &nc);
            let dir = h.parent().unwrap();
            if std::fs::read_dir(dir)
                .unwrap()
                .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".bin"))
            {
                let var = if dir == m.mp {
                    ""
                } else {
                    dir.file_name().unwrap().to_str().unwrap()
                };
                let var = var.strip_suffix(".node").unwrap_or(var);
                assert!(
                    var.is_empty() || dump.contains(&format!(" {}", var)),
                    "{var} not in\n{dump}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 90, "checked {checked} headers");
}

read_paths!(permissions_and_read_only_operations);
fn permissions_and_read_only_operations() {
    let m = Mount::new("sample.zarr", &[]);
    let uid = unsafe { libc::getuid() };
    let root = std::fs::metadata(&m.mp).unwrap();
    assert_eq!(root.permissions().mode() & 0o7777, 0o555);
    assert_eq!(root.uid(), uid);
    let chunk = m.mp.join("t2m/0.0.0.bin");
    let meta = std::fs::metadata(&chunk).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o444);
    assert_eq!(meta.len(), 5 * 10 * 7 * 4);
    let erofs = |r: std::io::Result<()>| {
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EROFS));
    };
    erofs(std::fs::write(m.mp.join("new"), b"x"));
    erofs(std::fs::create_dir(m.mp.join("d")));
    erofs(std::fs::remove_file(m.mp.join("header.cdl")));
    erofs(std::fs::remove_dir(m.mp.join("lat")));
    erofs(std::fs::rename(m.mp.join("lat"), m.mp.join("lat2")));
    erofs(std::fs::set_permissions(&chunk, std::fs::Permissions::from_mode(0o777)));
    erofs(std::fs::OpenOptions::new().write(true).open(&chunk).map(|_| ()));
    erofs(std::fs::OpenOptions::new().append(true).open(&chunk).map(|_| ()));
    // Absent names.
    assert_eq!(
        std::fs::metadata(m.mp.join("t2m/9.9.9.bin")).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
}

read_paths!(bad_nodes_fail_with_eio_logged_and_the_rest_keeps_working);
fn bad_nodes_fail_with_eio_logged_and_the_rest_keeps_working() {
    let m = Mount::new("bad.zarr", &[]);
    for name in ["unknown_field", "unknown_transformer", "bad_fill", "truncated"] {
        let err = std::fs::read_dir(m.mp.join(name)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{name}");
    }
    // An unknown codec: the directory lists, the header
    // describes the array, only the data files are EIO.
    assert!(std::fs::read_dir(m.mp.join("unknown_codec")).is_ok());
    let header = std::fs::read_to_string(m.mp.join("unknown_codec/header.cdl")).unwrap();
    assert!(
        header.contains("cannot be decoded") && header.contains("mystery_codec"),
        "{header}"
    );
    for f in ["data.bin", "0.bin"] {
        let err = std::fs::read(m.mp.join("unknown_codec").join(f)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{f}");
    }
    let err = std::fs::read(m.mp.join("bad_crc/1.bin")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(
        std::fs::read(m.mp.join("bad_crc/0.bin")).unwrap(),
        [5i32.to_ne_bytes(), 6i32.to_ne_bytes()].concat()
    );
    assert_eq!(
        std::fs::read(m.mp.join("good/1.bin")).unwrap(),
        [3i32.to_ne_bytes(), 4i32.to_ne_bytes()].concat()
    );
    // The root header still renders, and says which nodes were refused.
    let header = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    assert!(
        header.contains("unknown_codec") && header.contains("mystery_codec"),
        "{header}"
    );
    let log = m.log();
    assert!(
        log.contains("bad_crc/c/1") && log.contains("checksum mismatch"),
        "log:\n{log}"
    );
    assert!(log.contains("unknown_field") && log.contains("mystery"), "log:\n{log}");
}

read_paths!(missing_chunks_error_flag);
fn missing_chunks_error_flag() {
    let m = Mount::new("fills.zarr", &["--missing-chunks", "error"]);
    assert!(std::fs::read(m.mp.join("nan/0.0.bin")).is_ok());
    assert_eq!(
        std::fs::read(m.mp.join("nan/2.1.bin")).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert!(m.log().contains("nan/c/2/1"), "{}", m.log());
}

read_paths!(a_root_array_fills_the_mount_point);
fn a_root_array_fills_the_mount_point() {
    let m = Mount::new("root_array.zarr", &[]);
    let mut names: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "0.0.bin",
            "0.1.bin",
            "1.0.bin",
            "1.1.bin",
            "data.bin",
            "data.tif",
            "header.cdl",
            "index.html",
            "preview.png",
            "root_array.nc"
        ]
    );
}

read_paths!(concurrent_readers_see_the_same_bytes);
fn concurrent_readers_see_the_same_bytes() {
    let m = Mount::new("sample.zarr", &["--cache-size", "8KiB", "--threads", "2"]);
    let e = common::manifest()
        .into_iter()
        .find(|e| e.store == "sample.zarr" && e.path == "t2m")
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (m, e) = (&m, &e);
            s.spawn(move || {
                for round in 0..5 {
                    for i in 0..e.chunk_count() {
                        let k = (i + t + round) % e.chunk_count();
                        let bytes = std::fs::read(m.mp.join("t2m").join(e.chunk_name(k))).unwrap();
                        e.check_chunk(k, &bytes).unwrap();
                    }
                }
            });
        }
    });
}

read_paths!(broken_shard_indexes_give_eio_on_that_shard_only);
fn broken_shard_indexes_give_eio_on_that_shard_only() {
    let m = Mount::new("bad_sharding.zarr", &[]);
    for array in ["bad_checksum", "past_end"] {
        let err = std::fs::read(m.mp.join(array).join("1.bin")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{array}");
        let want: Vec<u8> = (0..8i32).flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(std::fs::read(m.mp.join(array).join("0.bin")).unwrap(), want);
    }
    let log = m.log();
    assert!(
        log.contains("bad_checksum/c/1") && log.contains("past_end/c/1"),
        "{log}"
    );
}

read_paths!(nzfs_cdl_prints_what_the_mount_shows);
fn nzfs_cdl_prints_what_the_mount_shows() {
    let m = Mount::new("hier.zarr", &[]);
    let store = common::data_dir().join("hier.zarr");
    for (node, file) in [
        ("", "header.cdl"),
        ("sub", "sub/header.cdl"),
        ("sub/deep/edge", "sub/deep/edge/header.cdl"),
    ] {
        let out = nzfs(&["cdl", store.to_str().unwrap(), node]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            std::fs::read_to_string(m.mp.join(file)).unwrap(),
            "{node}"
        );
    }
    let out = nzfs(&["cdl", store.to_str().unwrap(), "no/such/node"]);
    assert!(!out.status.success());
}

read_paths!(non_conformant_stores_mount_with_one_summary_warning);
fn non_conformant_stores_mount_with_one_summary_warning() {
    let m = Mount::new("nz_shared_dimension.zarr", &[]);
    assert!(std::fs::read_dir(m.mp.join("a")).is_ok());
    let log = m.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("declares NZ-1.0 but does not fully follow it"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("shared-dimension"), "{log}");
}

read_paths!(data_bin_reads_maps_and_slices_like_numpy);
fn data_bin_reads_maps_and_slices_like_numpy() {
    let manifest = common::manifest();
    let mut checked = 0;
    for store in [
        "sample.zarr",
        "sharding.zarr",
        "endian.zarr",
        "codecs.zarr",
        "hier.zarr",
        "dtypes.zarr",
    ] {
        let m = Mount::new(store, &[]);
        for e in manifest.iter().filter(|e| e.store == store) {
            let file = m.path(&e.path).join("data.bin");
            assert_eq!(std::fs::read(&file).unwrap(), e.bytes, "{store}/{}", e.path);
            assert_eq!(mmap_bytes(&file), e.bytes, "mmap {store}/{}", e.path);
            if e.shape.len() >= 2 && e.elements() > 0 {
                // dd of slab k along the first dimension, as header.cdl says.
                let slab: usize = e.shape[1..].iter().product::<u64>() as usize * e.item_size();
                let k = e.shape[0] as usize / 2;
                let out = std::process::Command::new("dd")
                    .arg(format!("if={}", file.display()))
                    .args([
                        format!("bs={slab}"),
                        format!("skip={k}"),
                        "count=1".into(),
                        "status=none".into(),
                    ])
                    .output()
                    .unwrap();
                assert_eq!(out.stdout, e.bytes[k * slab..(k + 1) * slab], "dd {store}/{}", e.path);
                let header = std::fs::read_to_string(m.path(&e.path).join("header.cdl")).unwrap();
                assert!(
                    header.contains(&format!("dd if=data.bin bs={slab} skip=k count=1")),
                    "{header}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 40);
}

read_paths!(string_arrays_show_data_txt_through_a_real_mount);
fn string_arrays_show_data_txt_through_a_real_mount() {
    // `cat data.txt` prints the values; stat knows the exact size first.
    let texts = common::text_manifest();
    let mut stores: Vec<&str> = texts.iter().map(|e| e.store.as_str()).collect();
    stores.dedup();
    let mut files = 0;
    for store in stores {
        let m = Mount::new(store, &[]);
        for e in texts.iter().filter(|e| e.store == store) {
            let dir = m.path(&e.path);
            let txt = dir.join("data.txt");
            assert_eq!(
                std::fs::metadata(&txt).unwrap().len(),
                e.text.len() as u64,
                "{}",
                txt.display()
            );
            let out = Command::new("cat").arg(&txt).output().unwrap();
            assert_eq!(out.stdout, e.text, "{}", txt.display());
            assert_eq!(dir.join("data.bin").exists(), e.chunks.is_empty());
            for (linear, want) in &e.chunks {
                let mut names: Vec<String> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|d| d.unwrap().file_name().into_string().unwrap())
                    .filter(|n| n.ends_with(".txt") && n != "data.txt")
                    .collect();
                names.sort();
                assert_eq!(std::fs::read(dir.join(&names[*linear as usize])).unwrap(), *want);
                files += 1;
            }
        }
    }
    assert!(files >= 12, "read {files} chunk text files");
}

read_paths!(a_root_array_with_an_unknown_codec_mounts_and_is_described);
/// A store whose root is an array with a codec nzfs does not
/// know still mounts; its header describes it, its data files are EIO.
fn a_root_array_with_an_unknown_codec_mounts_and_is_described() {
    // An unknown codec, chunk grid and data type: each root
    // array mounts; its header describes it and names what is unknown;
    // data.bin is EIO and the log says why.
    let grid = r#"{"name": "regular", "configuration": {"chunk_shape": [4]}}"#;
    let codecs = r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#;
    let mystery = r#"[{"name": "bytes", "configuration": {"endian": "little"}},
                      {"name": "numcodecs.mystery", "configuration": {"level": 4}}]"#;
    let hexagonal = r#"{"name": "hexagonal", "configuration": {"size": 3}}"#;
    for (what, data_type, grid, codecs) in [
        ("numcodecs.mystery", "float32", grid, mystery),
        ("hexagonal", "float32", hexagonal, codecs),
        ("complex_quaternion", "complex_quaternion", grid, codecs),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("odd.zarr");
        std::fs::create_dir_all(s.join("c")).unwrap();
        std::fs::write(
            s.join("zarr.json"),
            format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "{data_type}",
                "chunk_grid": {grid}, "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
                "codecs": {codecs}, "attributes": {{"units": "K"}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(s.join("c/0"), b"not data").unwrap();
        let m = Mount::at(&s, &[]);
        let header = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
        assert!(
            header.contains("units") && header.contains("\"K\"") && header.contains(what),
            "{what}: {header}"
        );
        let err = std::fs::read(m.mp.join("data.bin")).unwrap_err();
        assert!(
            [Some(libc::EIO), Some(libc::ENOENT)].contains(&err.raw_os_error()),
            "{what}: {err}"
        );
        assert!(m.log().contains(what), "{what}: {}", m.log());
        // ncgen accepts the header.
        let out = std::process::Command::new("ncgen")
            .args(["-o", tmp.path().join("h.nc").to_str().unwrap()])
            .arg(m.mp.join("header.cdl"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

fn set_mode_644(p: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// Every file under `root`, relative, sorted.
fn tree(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    common::servers::files(root)
        .into_iter()
        .map(|f| f.strip_prefix(root).unwrap().to_path_buf())
        .collect()
}

read_paths!(zip_stores_mount_as_their_directory);
/// Zip stores. zarr-python's ZipStore (stored members) and the
/// same store zipped with its folder and deflated members mount as the
/// directory zarr-python wrote beside them: the same files, the same bytes.
fn zip_stores_mount_as_their_directory() {
    let dir = Mount::new("zipped.zarr", &[]);
    let want = tree(&dir.mp);
    assert!(want.len() > 10, "{want:?}");
    for zip in ["zipped.zarr.zip", "zipped.zip"] {
        let m = Mount::new(zip, &[]);
        assert_eq!(tree(&m.mp), want, "{zip}");
        for f in &want {
            assert_eq!(
                std::fs::read(m.mp.join(f)).unwrap(),
                std::fs::read(dir.mp.join(f)).unwrap(),
                "{zip}: {}",
                f.display()
            );
        }
    }
    // Modes follow the zip's (0644): files readable by all, directories
    // searchable, files that combine members too.
    // A copy: a chmod of the fixture would change it under the other mounts
    // of it that run meanwhile (the read-path matrix's other half).
    use std::os::unix::fs::PermissionsExt;
    let copy = tempfile::tempdir().unwrap();
    let zip = copy.path().join("zipped.zip");
    std::fs::copy(common::data_dir().join("zipped.zip"), &zip).unwrap();
    set_mode_644(&zip);
    let m = Mount::at(&zip, &["-o", "allow_other"]);
    for (f, mode) in [
        ("", 0o555),
        ("field", 0o555),
        ("field/0.0.bin", 0o444),
        ("field/data.bin", 0o444),
        ("header.cdl", 0o444),
    ] {
        let got = std::fs::metadata(m.mp.join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "{f}");
    }
    drop(m);
    // Another file is refused with a message that says what is mounted.
    let tmp = tempfile::tempdir().unwrap();
    let not = tmp.path().join("data.txt");
    std::fs::write(&not, "hello").unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let out = common::mount::nzfs(&["mount", not.to_str().unwrap(), mp.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("a zip of one"), "{err}");
}
