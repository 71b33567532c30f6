//! The virtual netCDF file of each group, read by the real `ncdump`: it
//! must say what ncdump says of xarray's own netCDF-4 export of the same
//! dataset (scripts/make_fixtures.py, make_differential): dimensions,
//! variables, attributes and every value. Only order and the `netcdf NAME`
//! line may differ.

mod common;

use common::mount::{Mount, read_paths};
use common::netcdf_tools::ncdump;

/// Lines, trimmed, sorted, without the first (`netcdf NAME {`) and blanks.
/// ncdump splits a char attribute after each `\n` (`"a\n",` then `"b"`)
/// but prints a string attribute whole: such pieces are joined first.
fn normalized(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for l in text.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()) {
        match lines.last_mut() {
            Some(prev) if prev.ends_with("\\n\",") && l.starts_with('"') => {
                prev.truncate(prev.len() - 2);
                prev.push_str(&l[1..]);
            }
            _ => lines.push(l.to_string()),
        }
    }
    lines.sort();
    lines
}

/// Split ncdump of a netCDF-4 file into its root part and one group's block.
fn split_group(text: &str, group: &str) -> (String, String) {
    let open = format!("group: {group} {{");
    let close = format!("}} // group {group}");
    let (mut root, mut sub, mut inside) = (String::new(), String::from("netcdf sub {\n"), false);
    for line in text.lines() {
        if line.trim() == open {
            inside = true;
        } else if line.trim() == close {
            inside = false;
        } else if inside {
            sub.push_str(line);
            sub.push('\n');
        } else {
            root.push_str(line);
            root.push('\n');
        }
    }
    sub.push_str("}\n");
    // ncdump -h headings differ between a group and a file's root.
    (root, sub.replace("// group attributes:", "// global attributes:"))
}

read_paths!(virtual_netcdf_matches_xarrays_netcdf4_export_with_data);
fn virtual_netcdf_matches_xarrays_netcdf4_export_with_data() {
    let m = Mount::new("differential.zarr", &[]);
    let theirs = ncdump(&[], &common::data_dir().join("differential.nc"));
    let (their_root, their_sub) = split_group(&theirs, "sub");
    let ours_root = ncdump(&[], &m.mp.join("differential.nc"));
    let ours_sub = ncdump(&[], &m.mp.join("sub/sub.nc"));
    assert_eq!(
        normalized(&ours_root),
        normalized(&their_root),
        "\nours:\n{ours_root}\nxarray:\n{their_root}"
    );
    assert_eq!(
        normalized(&ours_sub),
        normalized(&their_sub),
        "\nours:\n{ours_sub}\nxarray:\n{their_sub}"
    );
    // The header size comes from metadata alone; data starts page-aligned.
    let meta = std::fs::metadata(m.mp.join("differential.nc")).unwrap();
    assert!(meta.len() > 4096);
    use std::os::unix::fs::MetadataExt;
    assert!(meta.blksize() >= 1 << 20);
    // Every other file asks for tmpfs-sized reads (cat, stdio: 128 KiB).
    let header = std::fs::metadata(m.mp.join("header.cdl")).unwrap();
    assert_eq!(header.blksize(), 128 << 10);
}

read_paths!(every_group_file_is_readable_by_ncdump_and_agrees_with_data_bin);
fn every_group_file_is_readable_by_ncdump_and_agrees_with_data_bin() {
    // CDF-2 (no int64) and CDF-5 stores, unsigned types, complex, float16,
    // bool, sharded and big-endian arrays.
    for store in [
        "keys.zarr",
        "dtypes.zarr",
        "endian.zarr",
        "sharding.zarr",
        "sample.zarr",
        "hier.zarr",
        "structs.zarr",
    ] {
        let m = Mount::new(store, &[]);
        let name = format!("{}.nc", store.trim_end_matches(".zarr"));
        let nc = m.mp.join(&name);
        let kind = ncdump(&["-k"], &nc);
        let dump = ncdump(&[], &nc);
        assert!(
            dump.contains("data:") || !dump.contains("variables:"),
            "{store}: {dump}"
        );
        if store == "keys.zarr" {
            assert_eq!(kind.trim(), "64-bit offset", "{store} should be CDF-2");
            assert!(dump.contains("_Unsigned = \"true\""), "{dump}");
        } else if store == "dtypes.zarr" {
            assert_eq!(kind.trim(), "cdf5");
            assert!(dump.contains("_nz_omitted = \"raw_bytes\""), "{dump}");
            assert!(dump.contains("_nz_complex = 2"), "{dump}");
        } else if store == "structs.zarr" {
            // Records are left out, saying why and where they are.
            assert!(dump.contains("_nz_omitted = \"legacy modern\""), "{dump}");
            assert!(
                dump.contains("legacy: records (a compound type), which classic netCDF cannot hold"),
                "{dump}"
            );
        }
    }
}

read_paths!(a_corrupt_chunk_fails_exactly_the_reads_that_touch_it);
fn a_corrupt_chunk_fails_exactly_the_reads_that_touch_it() {
    use std::os::unix::fs::FileExt;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("sample.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &store);
    // Chunk (1, 1, 1) of t2m holds time steps 5..10: data.bin bytes 5600..11200.
    std::fs::write(store.join("t2m/c/1/1/1"), b"not zstd at all").unwrap();
    let m = Mount::at(&store, &[]);
    let e = common::manifest()
        .into_iter()
        .find(|e| e.store == "sample.zarr" && e.path == "t2m")
        .unwrap();
    let data = std::fs::File::open(m.mp.join("t2m/data.bin")).unwrap();
    // The first page touches only time steps 0..4: it reads.
    let mut page = vec![0u8; 4096];
    data.read_exact_at(&mut page, 0).unwrap();
    assert_eq!(page, e.bytes[..4096]);
    // The last page touches the corrupt chunk: EIO.
    let err = data.read_exact_at(&mut page[..1000], 10_000).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    // The group's netCDF file reads whole (netCDF readers read past the
    // header at open): the corrupt chunk's part of t2m shows the fill, and
    // the log names the key.
    let nc = std::fs::read(m.mp.join("sample.nc")).unwrap();
    assert_eq!(&nc[..3], b"CDF");
    assert_eq!(
        nc.len() as u64,
        std::fs::metadata(m.mp.join("sample.nc")).unwrap().len()
    );
    let log = m.log();
    assert!(
        log.contains("t2m/c/1/1/1") && log.contains("the .nc shows its fill there"),
        "{log}"
    );
}

read_paths!(a_corrupt_variable_does_not_stop_the_file_opening);
/// netCDF-C's `ref_noshape` case: a scalar whose chunk holds 24 bytes for
/// one int. libnetcdf 4.10 reads the whole of a small file at open, so the
/// corrupt variable made every open fail ("Unknown file format"); now the
/// file reads whole (the scalar as its fill) and `data.bin` alone is EIO.
fn a_corrupt_variable_does_not_stop_the_file_opening() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir_all(s.join("v")).unwrap();
    std::fs::write(s.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::write(
        s.join("v/zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": -1,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}"#,
    )
    .unwrap();
    std::fs::write(s.join("v/c"), [7u8; 24]).unwrap();
    let m = Mount::at(&s, &[]);
    let nc = std::fs::read(m.mp.join("s.nc")).expect("the whole .nc, as libnetcdf 4.10 reads it at open");
    // The scalar's 4 bytes, big-endian, are the fill -1.
    assert_eq!(nc[nc.len() - 4..], (-1i32).to_be_bytes());
    assert!(ncdump(&["-v", "v"], &m.mp.join("s.nc")).contains("v = -1"));
    let err = std::fs::read(m.mp.join("v/data.bin")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
}

read_paths!(an_nczarr_stores_virtual_file_keeps_values_and_attribute_types);
fn an_nczarr_stores_virtual_file_keeps_values_and_attribute_types() {
    // nccopy copied nczarr_src.nc into v2_nczarr.zarr; the root group's
    // virtual file must hold what ncdump shows of the source's root group
    // (less the dimension no variable uses, which a classic file cannot
    // declare without a variable, and the subgroup, which has its own file).
    let m = Mount::new("v2_nczarr.zarr", &[]);
    let ours = ncdump(&[], &m.path("v2_nczarr.nc"));
    let (source, _) = split_group(&ncdump(&[], &common::data_dir().join("nczarr_src.nc")), "sub");
    let ours = normalized(&ours);
    let source: Vec<String> = normalized(&source)
        .into_iter()
        .filter(|l| !l.starts_with("bnds =") && !l.starts_with("group:") && l != "}")
        .collect();
    for want in [
        "v:flags = 1b, 2b ;",
        "v:weights = 0.5f, 0.25f ;",
        "v:count = 3s ;",
        ":version = 2 ;",
    ] {
        assert!(
            source.contains(&want.to_string()),
            "{want} not in the source: {source:?}"
        );
    }
    // The classic file is CDF-2 here: ubyte becomes byte with _Unsigned
    // (the documented mapping), which ncdump prints as signed values.
    let mut source: Vec<String> = source
        .into_iter()
        .map(|l| match l.as_str() {
            "ubyte q(nv) ;" => "byte q(nv) ;".to_string(),
            "q = 250, 1, 2, 3 ;" => "q = -6, 1, 2, 3 ;".to_string(),
            _ => l,
        })
        .chain(["q:_Unsigned = \"true\" ;".to_string()])
        .collect();
    source.sort();
    let ours: Vec<String> = ours.into_iter().filter(|l| l != "}").collect();
    assert_eq!(ours, source);
}

read_paths!(ncdump_h_decodes_nothing);
/// netCDF-C reads a whole `st_blksize` (1 MiB) at open. No data
/// starts inside it, so `ncdump -h` decodes no chunk (the status document
/// counts them), and a variable whose chunks are corrupt does not stop the
/// header from being read.
fn ncdump_h_decodes_nothing() {
    let m = Mount::new("sample.zarr", &["--passthrough", "never"]);
    let nc = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "nc"))
        .unwrap();
    let header = ncdump(&["-h"], &nc);
    assert!(header.contains("variables:"), "{header}");
    let status = common::mount::nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("\"chunks_decoded\":0"), "{status}");
    // A whole ncdump then decodes: the counter is live.
    ncdump(&[], &nc);
    let status = common::mount::nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(!status.contains("\"chunks_decoded\":0"), "{status}");
}

read_paths!(nc_format_cdf2_keeps_the_file_cdf2_and_says_what_it_left_out);
/// `--nc-format cdf2`, for readers without CDF-5 (GDAL 3.6): the `.nc` of
/// a store with an int64 variable and a 64-bit integer attribute stays
/// CDF-2; the variable is left out, saying why, the attribute becomes a
/// double, the rest is as in the CDF-5 file of a plain mount.
fn nc_format_cdf2_keeps_the_file_cdf2_and_says_what_it_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(
        s.join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "group", "attributes": {"big": 5000000000, "small": [7, -8]}}"#,
    )
    .unwrap();
    for (name, dt, bytes) in [("counts", "int64", 8usize), ("w", "float32", 4)] {
        std::fs::create_dir_all(s.join(name)).unwrap();
        std::fs::write(
            s.join(name).join("zarr.json"),
            format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "{dt}",
                "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [3]}}}},
                "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "dimension_names": ["x"],
                "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}"#
            ),
        )
        .unwrap();
        let values: Vec<u8> = match bytes {
            8 => [1i64, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
            _ => [1.5f32, 2.5, 3.5].iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        std::fs::create_dir_all(s.join(name).join("c")).unwrap();
        std::fs::write(s.join(name).join("c/0"), values).unwrap();
    }
    let auto = Mount::at(&s, &[]);
    assert_eq!(ncdump(&["-k"], &auto.mp.join("s.nc")).trim(), "cdf5");
    let m = Mount::at(&s, &["--nc-format", "cdf2"]);
    let nc = m.mp.join("s.nc");
    assert_eq!(ncdump(&["-k"], &nc).trim(), "64-bit offset");
    let dump = ncdump(&[], &nc);
    assert!(dump.contains(":_nz_omitted = \"counts\" ;"), "{dump}");
    assert!(
        dump.contains("counts: 64-bit integers (int64, uint64 or times), which CDF-2 cannot hold"),
        "{dump}"
    );
    assert!(dump.contains(":big = 5000000000. ;"), "{dump}");
    assert!(dump.contains(":small = 7, -8 ;"), "{dump}");
    assert!(dump.contains("w = 1.5, 2.5, 3.5 ;"), "{dump}");
    // The same variable as in the CDF-5 file.
    let w = |nc: &std::path::Path| {
        let d = ncdump(&["-v", "w"], nc);
        d[d.find("data:").unwrap()..].to_string()
    };
    assert_eq!(w(&nc), w(&auto.mp.join("s.nc")));
}

read_paths!(a_packed_xarray_variable_gives_a_cdf2_nc_that_gdal_opens);
/// An ordinary xarray dataset with a packed `int16` variable
/// (`scale_factor`, `_FillValue: -32768`, `valid_min`/`valid_max` in packed
/// values, all JSON integers) gets a CDF-2 `.nc`: those attributes take the
/// variable's type (the NUG and CF rule), as `header.cdl` says, so nothing
/// in it needs CDF-5, and GDAL 3.6 (Debian 12's) opens it and reads the
/// values xarray wrote. Old code: CDF-5 (the integers taken as int64),
/// which GDAL refuses ("not recognized as a supported file format").
fn a_packed_xarray_variable_gives_a_cdf2_nc_that_gdal_opens() {
    let m = Mount::new("packed.zarr", &[]);
    let nc = m.mp.join("packed.nc");
    assert_eq!(ncdump(&["-k"], &nc).trim(), "64-bit offset");
    let dump = ncdump(&["-h"], &nc);
    let header = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    for line in [
        "t2m:_FillValue = -32768s ;",
        "t2m:valid_min = 0s ;",
        "t2m:valid_max = 20000s ;",
        "t2m:scale_factor = 0.01 ;",
    ] {
        assert!(dump.contains(line), "the .nc lacks {line}: {dump}");
        assert!(header.contains(line), "header.cdl lacks {line}: {header}");
    }
    let info = std::process::Command::new("gdalinfo").arg(&nc).output().unwrap();
    assert!(
        info.status.success(),
        "gdalinfo: {}",
        String::from_utf8_lossy(&info.stderr)
    );
    // Band b is time step b - 1, north up: row 0 is the last latitude.
    let want = std::fs::read(common::data_dir().join("expected/packed/t2m.bin")).unwrap();
    let value = |t: usize, y: usize, x: usize| {
        let at = 2 * ((t * 3 + y) * 4 + x);
        f64::from(i16::from_le_bytes([want[at], want[at + 1]]))
    };
    for (band, x, row) in [(1, 0, 0), (1, 3, 1), (2, 2, 2), (2, 1, 0)] {
        let out = std::process::Command::new("gdallocationinfo")
            .args(["-valonly", "-b", &band.to_string()])
            .arg(&nc)
            .args([x.to_string(), row.to_string()])
            .output()
            .unwrap();
        let got: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(got, value(band - 1, 2 - row, x), "band {band} pixel ({x}, {row})");
    }
}

/// The registry's narrow types are shown widened in the `.nc` and
/// `data.tif` too, not only in `data.bin`: the `.nc` stays classic (64-bit
/// offset) with `int4`/`uint4` as `byte` variables holding the values
/// tensorstore and ml_dtypes read, and GDAL reads the same values from each
/// array's `data.tif` (`float8_e4m3fn` as float32; `uint4` as 8-bit, whose
/// 0 to 15 read alike signed or not: GDAL 3.6 reads any 8-bit TIFF as
/// unsigned).
#[test]
fn narrow_types_show_widened_in_the_nc_and_data_tif() {
    let m = Mount::new("narrow.zarr", &[]);
    let nc = m.mp.join("narrow.nc");
    assert_eq!(ncdump(&["-k"], &nc).trim(), "64-bit offset");
    let manifest = common::manifest();
    let expected = |path: &str| {
        manifest
            .iter()
            .find(|e| e.store == "narrow.zarr" && e.path == path)
            .unwrap()
            .clone()
    };
    for name in ["int4", "uint4"] {
        let dump = ncdump(&["-v", name], &nc);
        assert!(dump.contains(&format!("\tbyte {name}(")), "{dump}");
        let data = dump.split_once("data:").unwrap().1;
        let values: Vec<i8> = data
            .split_once('=')
            .unwrap()
            .1
            .trim_end_matches(|c: char| c == '}' || c.is_whitespace() || c == ';')
            .split(',')
            .map(|v| v.trim().parse().unwrap())
            .collect();
        let want: Vec<i8> = expected(name).bytes.iter().map(|&b| b as i8).collect();
        assert_eq!(values, want, "{name} in the .nc");
    }
    for (name, item) in [("uint4", 1), ("float8_e4m3fn", 4)] {
        let e = expected(name);
        let tif = m.mp.join(name).join("data.tif");
        for (x, y) in [(0usize, 0usize), (5, 1), (2, 3)] {
            let at = (y * 6 + x) * item;
            let want = match item {
                1 => f64::from(e.bytes[at] as i8),
                _ => f64::from(f32::from_le_bytes(e.bytes[at..at + 4].try_into().unwrap())),
            };
            assert_eq!(
                common::image_tools::gdal_pixel(&tif, x, y),
                want,
                "{name} ({x}, {y}) in data.tif"
            );
        }
    }
}
