//! netCDF-4 files written through a writable mount of an Icechunk branch
//! by netCDF-C's `nccopy` and `ncgen`, NCO's `ncks` and CDO: each file
//! closed as `NAME.nc` becomes the group `NAME`, one commit each, whose
//! `.nc` ncdump prints with the values of the file written elsewhere;
//! each writer exits 0. A netCDF-4 file of what is not taken yet (a
//! nested group) fails its close with `EIO`, names why in the log, and
//! leaves the branch as it was.
#![cfg(feature = "icechunk")]

mod common;

use std::path::Path;
use std::process::Command;

use common::mount::Mount;
use common::netcdf_tools::{data_section, ncdump, ok};
use common::repos::refs;

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

/// netCDF-4's own types, two unlimited dimensions, a fill value of an
/// unsigned type and a variable stored with fletcher32 checksums, as
/// `ncgen -k nc4` writes them.
const CDL_NC4: &str = r#"netcdf types {
dimensions:
	t = UNLIMITED ;
	s = UNLIMITED ;
	k = 2 ;
variables:
	int64 big(t, k) ;
		big:long_name = "past 2^53" ;
		big:_Fletcher32 = "true" ;
	ubyte flag(s) ;
		flag:_FillValue = 255UB ;
	ushort count(k) ;
	uint64 id(k) ;
// global attributes:
		:source = "ncgen -k nc4" ;
data:
 big = 9007199254740993, -2, 3, 4 ;
 flag = 1, _, 3 ;
 count = 7, 65535 ;
 id = 18446744073709551615, 0 ;
}
"#;

/// Each variable's values as ncdump prints them, by name: a Zarr group
/// keeps no order of its arrays, and its `.nc` lists them by name.
/// `ncgen -k nc4 -o MOUNT/NAME.nc CDL`: what it printed and how it exited.
fn ncgen_into(m: &Mount, name: &str, cdl: &Path) -> std::process::Output {
    Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(m.mp.join(format!("{name}.nc")))
        .arg(cdl)
        .output()
        .unwrap()
}

fn by_variable(nc: &Path) -> std::collections::BTreeMap<String, String> {
    data_section(nc)
        .split(';')
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "}")
        .filter_map(|v| v.split_once(" = ").map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// Old code: every netCDF-4 file failed its close ("not a netCDF classic
/// file"), and netCDF-C's writers then died.
#[test]
fn netcdf4_files_become_groups_one_commit_each() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("out.cdl");
    std::fs::write(&cdl, CDL).unwrap();
    let source = dir.path().join("source.nc");
    ok(Command::new("ncgen")
        .args(["-k", "classic", "-o"])
        .arg(&source)
        .arg(&cdl));
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let mut tips = vec![refs(&repo)];
    let writers: Vec<(&str, Command)> = vec![
        ("nccopy_nc4", {
            let mut c = Command::new("nccopy");
            c.args(["-k", "nc4"]).arg(&source).arg(m.mp.join("nccopy_nc4.nc"));
            c
        }),
        ("nccopy_nc7", {
            let mut c = Command::new("nccopy");
            c.args(["-k", "nc7"]).arg(&source).arg(m.mp.join("nccopy_nc7.nc"));
            c
        }),
        ("nccopy_zip", {
            let mut c = Command::new("nccopy");
            c.args(["-k", "nc4", "-d", "5", "-s"])
                .arg(&source)
                .arg(m.mp.join("nccopy_zip.nc"));
            c
        }),
        ("ncks_4", {
            let mut c = Command::new("ncks");
            c.args(["-O", "-4"]).arg(&source).arg(m.mp.join("ncks_4.nc"));
            c
        }),
    ];
    let want = data_section(&source);
    for (name, mut writer) in writers {
        ok(&mut writer);
        // NCO renames its temporary file: the kernel is told of the group
        // after the rename's answer.
        let start = std::time::Instant::now();
        while !m.mp.join(name).is_dir() {
            assert!(start.elapsed().as_secs() < 10, "{name} never showed: {}", m.log());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tips.push(refs(&repo));
        assert_eq!(
            data_section(&m.mp.join(name).join(format!("{name}.nc"))),
            want,
            "{name}: the values ncdump prints"
        );
        let header = std::fs::read_to_string(m.mp.join(name).join("header.cdl")).unwrap();
        for line in [
            "float v(time, n) ;",
            "v:_FillValue = -1.f ;",
            "v:units = \"K\" ;",
            ":title = \"written through nzfs\" ;",
        ] {
            assert!(header.contains(line), "{name}: {line:?} in\n{header}");
        }
    }
    // CDO's time mean, written as netCDF-4 with zlib.
    ok(Command::new("cdo")
        .args(["-s", "-f", "nc4", "-z", "zip_5", "timmean"])
        .arg(&source)
        .arg(m.mp.join("cdo_nc4.nc")));
    tips.push(refs(&repo));
    let mean = ncdump(&["-v", "v"], &m.mp.join("cdo_nc4/cdo_nc4.nc"));
    assert!(mean.contains("2.75, 5, 4.625"), "{mean}");
    // netCDF-4's own types and two unlimited dimensions.
    let types = dir.path().join("types.cdl");
    std::fs::write(&types, CDL_NC4).unwrap();
    ok(Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(m.mp.join("types.nc"))
        .arg(&types));
    tips.push(refs(&repo));
    let elsewhere = dir.path().join("types.nc");
    ok(Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(&elsewhere)
        .arg(&types));
    let read = by_variable(&m.mp.join("types/types.nc"));
    assert_eq!(read, by_variable(&elsewhere));
    assert_eq!(read.len(), 4, "{read:?}");
    let header = std::fs::read_to_string(m.mp.join("types/header.cdl")).unwrap();
    for line in [
        "int64 big(t, k) ;",
        "ubyte flag(s) ;",
        "flag:_FillValue = 255UB ;",
        "uint64 id(k) ;",
    ] {
        assert!(header.contains(line), "types: {line:?} in\n{header}");
    }
    for pair in tips.windows(2) {
        assert_ne!(pair[0], pair[1], "each file moved the branch");
    }
}

/// Nested groups become nested groups, a variable of a group below using
/// a dimension of the one above; a `char` variable its strings.
#[test]
fn a_netcdf4_file_s_nested_groups_become_nested_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("nested.cdl");
    std::fs::write(
        &cdl,
        "netcdf nested {\ndimensions:\n\tx = 2 ;\n\tlen = 5 ;\nvariables:\n\tint a(x) ;\n\tchar name(x, len) ;\n\
         data:\n a = 1, 2 ;\n name = \"alpha\", \"beta\" ;\n\
         group: inner {\nvariables:\n\tint b(x) ;\n\t\tb:units = \"m\" ;\ndata:\n b = 3, 4 ;\n\
         group: deeper {\ndimensions:\n\ty = 3 ;\nvariables:\n\tdouble c(y) ;\ndata:\n c = 0.5, 1.5, 2.5 ;\n}\n}\n}\n",
    )
    .unwrap();
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let before = refs(&repo);
    ok(Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(m.mp.join("nested.nc"))
        .arg(&cdl));
    assert_ne!(refs(&repo), before, "one commit");
    let top = by_variable(&m.mp.join("nested/nested.nc"));
    assert_eq!(top.get("a").map(String::as_str), Some("1, 2"), "{top:?}");
    assert_eq!(
        top.get("name").map(String::as_str),
        Some("\"alpha\", \"beta\""),
        "{top:?}"
    );
    let inner = by_variable(&m.mp.join("nested/inner/inner.nc"));
    assert_eq!(inner.get("b").map(String::as_str), Some("3, 4"), "{inner:?}");
    let deeper = by_variable(&m.mp.join("nested/inner/deeper/deeper.nc"));
    assert_eq!(deeper.get("c").map(String::as_str), Some("0.5, 1.5, 2.5"), "{deeper:?}");
    let header = std::fs::read_to_string(m.mp.join("nested/inner/header.cdl")).unwrap();
    assert!(header.contains("b:units = \"m\" ;"), "{header}");
}

/// netCDF-4's user-defined types that have a Zarr form, as `ncgen -k nc4`
/// writes them: an enum becomes its base type with CF's `flag_values` and
/// `flag_meanings`; a compound (padded in the file, one nested in another)
/// becomes a `struct` array of packed records, which the mount reads back
/// field for field. (ncgen 4.9 lays out a compound whose last field leaves
/// padding at its end wrongly, netCDF4-python reading it back as garbage
/// too: the nested type here ends on an 8-byte field.)
#[test]
fn a_netcdf4_enum_and_compound_become_flags_and_a_struct_array() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("ud.cdl");
    std::fs::write(
        &cdl,
        "netcdf ud {\ntypes:\n  ubyte enum cloud_t {Clear = 0, Cumulonimbus = 1, Stratus = 2, Missing = 255} ;\n\
         \x20 compound obs_t {\n    double lat ;\n    float temp ;\n    short flags ;\n    int64 id ;\n  } ;\n\
         \x20 compound nest_t {\n    obs_t o ;\n    int64 n ;\n  } ;\n\
         dimensions:\n  x = 3 ;\nvariables:\n  cloud_t cloud(x) ;\n    cloud:_FillValue = Missing ;\n\
         \x20 obs_t obs(x) ;\n    obs:long_name = \"observations\" ;\n  nest_t nest(x) ;\n\
         data:\n  cloud = Clear, Stratus, _ ;\n\
         \x20 obs = {1.5, 2.25, 3, 7}, {4, 5, 6, 9007199254740993}, {-1, -2, -3, -4} ;\n\
         \x20 nest = {{1, 2, 3, 4}, 5}, {{6, 7, 8, 9}, 10}, {{11, 12, 13, 14}, 15} ;\n}\n",
    )
    .unwrap();
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let before = refs(&repo);
    let out = ncgen_into(&m, "ud", &cdl);
    assert!(out.status.success(), "ncgen exits 0: {}", m.log());
    assert_ne!(refs(&repo), before, "one commit");
    assert_eq!(std::fs::read(m.mp.join("ud/cloud/data.bin")).unwrap(), [0, 2, 255]);
    let header = std::fs::read_to_string(m.mp.join("ud/cloud/header.cdl")).unwrap();
    assert!(
        header.contains("cloud:flag_values = 0UB, 1UB, 2UB, 255UB ;"),
        "{header}"
    );
    assert!(
        header.contains("cloud:flag_meanings = \"Clear Cumulonimbus Stratus Missing\" ;"),
        "{header}"
    );
    assert!(header.contains("cloud:_FillValue = 255UB ;"), "{header}");
    // Packed records, each field little-endian: 8 + 4 + 2 + 8 bytes.
    let obs = |lat: f64, temp: f32, flags: i16, id: i64| {
        [
            lat.to_le_bytes().as_slice(),
            &temp.to_le_bytes(),
            &flags.to_le_bytes(),
            &id.to_le_bytes(),
        ]
        .concat()
    };
    let records = [
        obs(1.5, 2.25, 3, 7),
        obs(4.0, 5.0, 6, 9007199254740993),
        obs(-1.0, -2.0, -3, -4),
    ]
    .concat();
    assert_eq!(std::fs::read(m.mp.join("ud/obs/data.bin")).unwrap(), records);
    let nested = [
        obs(1.0, 2.0, 3, 4),
        5i64.to_le_bytes().to_vec(),
        obs(6.0, 7.0, 8, 9),
        10i64.to_le_bytes().to_vec(),
        obs(11.0, 12.0, 13, 14),
        15i64.to_le_bytes().to_vec(),
    ]
    .concat();
    assert_eq!(std::fs::read(m.mp.join("ud/nest/data.bin")).unwrap(), nested);
    let doc = std::fs::read_to_string(m.mp.join("ud/obs/zarr.json"))
        .or_else(|_| std::fs::read_to_string(m.mp.join("ud/obs/header.cdl")))
        .unwrap();
    assert!(doc.contains("observations"), "{doc}");
    let header = std::fs::read_to_string(m.mp.join("ud/obs/header.cdl")).unwrap();
    for line in [
        "double lat ;",
        "float temp ;",
        "short flags ;",
        "int64 id ;",
        "{lat: float64 @ 0, temp: float32 @ 8, flags: int16 @ 12, id: int64 @ 14}",
    ] {
        assert!(header.contains(line), "{line}: {header}");
    }
    // The group's classic .nc holds the enum (flags of its type) and names
    // the records it cannot hold.
    let nc = ncdump(&[], &m.mp.join("ud/ud.nc"));
    assert!(nc.contains("cloud:flag_values = 0b, 1b, 2b, -1b ;"), "{nc}");
    assert!(nc.contains(":_nz_omitted = \"nest obs\" ;"), "{nc}");
    // A record written into data.bin is one more commit, read back.
    let before = refs(&repo);
    let again = obs(40.0, 273.5, -7, 12345);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(m.mp.join("ud/obs/data.bin"))
            .unwrap();
        f.write_all_at(&again, 22).unwrap();
        f.sync_all().unwrap();
    }
    assert_ne!(refs(&repo), before, "the edit commits");
    let mut edited = records.clone();
    edited[22..44].copy_from_slice(&again);
    assert_eq!(std::fs::read(m.mp.join("ud/obs/data.bin")).unwrap(), edited);
}

/// netCDF-4 `string` variables (xarray writes its `str` coordinates so)
/// become Zarr's variable-length strings (`string`, `vlen-utf8`): each
/// value as written, newlines, backslashes, UTF-8 and empty strings
/// included, which the mount's `data.txt` shows one escaped line each.
#[test]
fn a_netcdf4_string_variable_becomes_variable_length_strings() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let cdl = dir.path().join("names.cdl");
    std::fs::write(
        &cdl,
        "netcdf names {\ndimensions:\n\tstation = 3 ;\n\tk = 2 ;\nvariables:\n\tstring name(station, k) ;\n\
         \t\tname:long_name = \"station names\" ;\n\tstring one ;\n\
         data:\n name = \"Mawson\", \"\", \"two\\nlines\", \"back\\\\slash\", \"Vestfold Hills\", \"\u{e9}t\u{e9}\" ;\n\
         \x20one = \"alone\" ;\n}\n",
    )
    .unwrap();
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let before = refs(&repo);
    let out = ncgen_into(&m, "names", &cdl);
    assert!(out.status.success(), "ncgen exits 0: {}", m.log());
    assert_ne!(refs(&repo), before, "one commit");
    assert_eq!(
        std::fs::read_to_string(m.mp.join("names/name/data.txt")).unwrap(),
        "Mawson\n\ntwo\\nlines\nback\\\\slash\nVestfold Hills\n\u{e9}t\u{e9}\n"
    );
    assert_eq!(
        std::fs::read_to_string(m.mp.join("names/one/data.txt")).unwrap(),
        "alone\n"
    );
    let header = std::fs::read_to_string(m.mp.join("names/name/header.cdl")).unwrap();
    assert!(header.contains("string name(station, k) ;"), "{header}");
    assert!(header.contains("name:long_name = \"station names\" ;"), "{header}");
    // Strings of more than 8 MiB in all are refused, counted from their
    // lengths before one is read.
    let long = "a".repeat(1 << 20);
    let values = vec![format!("\"{long}\""); 9].join(", ");
    std::fs::write(
        &cdl,
        format!("netcdf long {{\ndimensions:\n\tx = 9 ;\nvariables:\n\tstring s(x) ;\ndata:\n s = {values} ;\n}}\n"),
    )
    .unwrap();
    let before = refs(&repo);
    let out = ncgen_into(&m, "long", &cdl);
    assert!(!out.status.success(), "the close fails");
    assert_eq!(refs(&repo), before, "the branch did not move");
    let log = m.log_with("in all (at most");
    assert!(
        log.contains("strings of 9437184 bytes in all (at most 8388608)"),
        "{log}"
    );
}

/// A plain HDF5 file as h5py writes it (`scripts/fixtures_hdf5.py`: no
/// dimension scales), closed as `NAME.h5`, becomes the group `NAME` by
/// netCDF-4's rules: each dataset an array equal to what numpy wrote, its
/// group a group, its attributes kept, each dimension named by its
/// length. Another ending (`.hdf5`) is refused at `open`.
#[test]
fn an_hdf5_file_closed_as_name_h5_becomes_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let h5 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h5py");
    let before = refs(&repo);
    ok(Command::new("cp").arg(h5.join("plain.h5")).arg(m.mp.join("plain.h5")));
    assert_ne!(refs(&repo), before, "one commit");
    for path in ["a", "g/b", "c"] {
        assert_eq!(
            std::fs::read(m.mp.join(format!("plain/{path}/data.bin"))).unwrap(),
            std::fs::read(h5.join(format!("expected/{path}.bin"))).unwrap(),
            "{path}"
        );
    }
    let header = std::fs::read_to_string(m.mp.join("plain/a/header.cdl")).unwrap();
    assert!(header.contains("int a(dim_2, dim_3) ;"), "{header}");
    assert!(header.contains("a:units = \"m\" ;"), "{header}");
    let group = std::fs::read_to_string(m.mp.join("plain/header.cdl")).unwrap();
    assert!(group.contains(":title = \"written by h5py\" ;"), "{group}");
    let refused = std::fs::File::create(m.mp.join("plain2.hdf5")).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EINVAL), "{refused}");
}

/// The file's chunk shape is kept where it is sensible (`nccopy -c`):
/// 50 x 400 floats a chunk of a 100 x 400 variable make two chunk files;
/// chunks of 2 x 2 (16 bytes) are not kept, and the variable is one chunk.
#[test]
fn a_netcdf4_variable_keeps_the_file_s_chunk_shape_where_it_is_sensible() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let values: Vec<String> = (0..40_000).map(|i| (i % 977).to_string()).collect();
    let cdl = dir.path().join("big.cdl");
    std::fs::write(
        &cdl,
        format!(
            "netcdf big {{\ndimensions:\n\ty = 100 ;\n\tx = 400 ;\nvariables:\n\tfloat v(y, x) ;\ndata:\n v = {} ;\n}}\n",
            values.join(", ")
        ),
    )
    .unwrap();
    let classic = dir.path().join("big.nc");
    ok(Command::new("ncgen")
        .args(["-k", "classic", "-o"])
        .arg(&classic)
        .arg(&cdl));
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    ok(Command::new("nccopy")
        .args(["-k", "nc4", "-c", "y/50,x/400"])
        .arg(&classic)
        .arg(m.mp.join("kept.nc")));
    ok(Command::new("nccopy")
        .args(["-k", "nc4", "-c", "y/2,x/2"])
        .arg(&classic)
        .arg(m.mp.join("tiny.nc")));
    let chunks = |group: &str| {
        let mut names: Vec<String> = std::fs::read_dir(m.mp.join(group).join("v"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".bin") && n != "data.bin")
            .collect();
        names.sort();
        names
    };
    assert_eq!(chunks("kept"), ["0.0.bin", "1.0.bin"], "the file's 50 x 400 chunks");
    assert_eq!(
        chunks("tiny"),
        ["0.0.bin"],
        "16-byte chunks not kept: the variable fits one"
    );
    let want = std::fs::read(m.mp.join("kept/v/data.bin")).unwrap();
    assert_eq!(std::fs::read(m.mp.join("tiny/v/data.bin")).unwrap(), want);
    let expect: Vec<u8> = (0..40_000).flat_map(|i| ((i % 977) as f32).to_ne_bytes()).collect();
    assert_eq!(want, expect, "the values ncgen wrote");
}

/// A type with no Zarr form here yet (a `string` variable, an opaque
/// one) fails the close with `EIO`, names why in the log, and leaves the
/// branch as it was.
#[test]
fn a_netcdf4_file_of_what_is_not_taken_fails_its_close_and_leaves_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    for (name, cdl) in [
        (
            "vlen",
            "netcdf vlen {\ntypes:\n\tint(*) ragged ;\ndimensions:\n\tx = 2 ;\nvariables:\n\tragged r(x) ;\n\
             data:\n r = {1, 2}, {3} ;\n}\n",
        ),
        (
            "opaque",
            "netcdf opaque {\ntypes:\n\topaque(4) blob ;\ndimensions:\n\tx = 1 ;\nvariables:\n\tblob o(x) ;\n\
             data:\n o = 0X01020304 ;\n}\n",
        ),
    ] {
        let path = dir.path().join(format!("{name}.cdl"));
        std::fs::write(&path, cdl).unwrap();
        let before = refs(&repo);
        let out = Command::new("ncgen")
            .args(["-k", "nc4", "-o"])
            .arg(m.mp.join(format!("{name}.nc")))
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name}: the close fails, and ncgen says so");
        assert!(
            m.log().contains("not taken from a netCDF-4 file yet"),
            "{name}: {}",
            m.log()
        );
        assert_eq!(refs(&repo), before, "{name}: the branch did not move");
    }
}

/// A netCDF-4 file cut short or with bytes changed anywhere in its first
/// 4 KiB (its superblock, object headers, heaps) is refused or read, never
/// a panic or a hang; and what reads gives values only within the bounds
/// the reader is opened with.
#[test]
fn a_damaged_netcdf4_file_is_refused_or_read_and_never_takes_the_daemon_down() {
    let dir = tempfile::tempdir().unwrap();
    let cdl = dir.path().join("types.cdl");
    std::fs::write(&cdl, CDL_NC4).unwrap();
    let whole = dir.path().join("whole.nc");
    ok(Command::new("ncgen").args(["-k", "nc4", "-o"]).arg(&whole).arg(&cdl));
    let bytes = std::fs::read(&whole).unwrap();
    let damaged = dir.path().join("damaged.nc");
    let try_one = |b: &[u8]| {
        std::fs::write(&damaged, b).unwrap();
        let f = std::fs::File::open(&damaged).unwrap();
        if let Ok(opened) = nzfs::netcdf::nc4::open(&f) {
            for (i, (_, model)) in opened.groups.iter().enumerate() {
                for v in &model.vars {
                    let shape = model.shape(v);
                    let zeros = vec![0; shape.len()];
                    let _ = opened.values(i).read(model, v, &zeros, &shape);
                }
            }
        }
    };
    for len in (0..bytes.len()).step_by(97) {
        try_one(&bytes[..len]);
    }
    let mut refused = 0;
    for at in (0..bytes.len().min(4096)).step_by(7) {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[at] ^= flip;
            try_one(&b);
            let f = std::fs::File::open(&damaged).unwrap();
            refused += usize::from(nzfs::netcdf::nc4::open(&f).is_err());
        }
    }
    assert!(refused > 0, "some damage is seen");
}

/// A small file that declares a vast variable (its chunks unwritten, so
/// it would read as fill values) is refused at once, before any read.
#[test]
fn a_small_netcdf4_file_declaring_vast_variables_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cdl = dir.path().join("vast.cdl");
    std::fs::write(
        &cdl,
        "netcdf vast {\ndimensions:\n\tx = 1000000 ;\n\ty = 1000000 ;\nvariables:\n\tdouble v(x, y) ;\n\
         \t\tv:_ChunkSizes = 1000, 1000 ;\n}\n",
    )
    .unwrap();
    let nc = dir.path().join("vast.nc");
    ok(Command::new("ncgen").args(["-k", "nc4", "-o"]).arg(&nc).arg(&cdl));
    assert!(std::fs::metadata(&nc).unwrap().len() < 1 << 20);
    let f = std::fs::File::open(&nc).unwrap();
    let e = nzfs::netcdf::nc4::open(&f).err().expect("refused").to_string();
    assert!(e.contains("mostly unwritten"), "{e}");
}

/// Hostile netCDF-4 files (`scripts/fixtures_hdf5.py`): group graphs that
/// are not trees, groups too deep or too many, a heap claiming 2^60 bytes,
/// chunk indexes that point back at themselves or lie about their sizes,
/// and 9 MiB of text deflated into a few KiB (a `char` variable is read
/// whole, at most 8 MiB).
/// Each written through the mount fails its close, names why in the log,
/// leaves the branch as it was, and the daemon stays up and small; a file
/// with an external link is taken without following it.
#[test]
fn hostile_netcdf4_files_are_refused_at_close_and_the_daemon_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, spool) = common::repos::writable_copy(dir.path());
    let m = Mount::at(&repo, &["--writable", "--spool-dir", spool.to_str().unwrap()]);
    let hostile = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile_hdf5");
    let mut names: Vec<_> = std::fs::read_dir(&hostile)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 12);
    for path in &names {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let before = refs(&repo);
        // cp, which reports close(2)'s error (a File's drop does not).
        let cp = Command::new("cp")
            .arg(path)
            .arg(m.mp.join(format!("{name}.nc")))
            .output()
            .unwrap();
        assert!(!cp.status.success(), "{name}: the close fails");
        assert_eq!(refs(&repo), before, "{name}: the branch did not move");
        let log = m.log_with(&format!("{name}.nc"));
        assert!(
            log.contains(&format!("{name}.nc")),
            "{name}: the log names the file: {log}"
        );
        assert!(!m.mp.join(name).exists(), "{name}: no group appeared");
        // The daemon answers (nzfs status asks it, past the kernel's caches).
        m.status();
    }
    let log = m.log();
    for why in [
        "links to a group already linked",
        "nested deeper than 32",
        "B-tree v1 traversal revisits",
        "exceeds the 8388608 byte read limit; not taken",
    ] {
        assert!(log.contains(why), "{why}: {log}");
    }
    // Within the cache budget and a constant.
    let peak = common::mount::vm_hwm(m.daemon_pid());
    assert!(peak < 512 << 20, "daemon peak {peak} bytes");
    // An external link is a name only: the file is taken, the link's
    // target (outside the spool) never read.
    ok(Command::new("cp")
        .arg(hostile.join("external.nc.ok"))
        .arg(m.mp.join("external.nc")));
    assert!(m.mp.join("external/g/w").is_dir());
    assert!(!m.mp.join("external/g/ext").exists());
}
