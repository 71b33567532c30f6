//! Write-back: a netCDF classic file (CDF-1, CDF-2 and CDF-5, as netCDF-C's
//! own `ncgen` writes them) becomes a group of an Icechunk branch in one
//! commit, and a mount of the branch shows it: `ncdump` of the group's
//! `.nc` prints the values `ncdump` prints of the file, and its
//! `header.cdl` the same names, dimensions and attributes.
#![cfg(feature = "icechunk")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mount::Mount;
use common::repos::{REPO, refs};
use nzfs::store::icechunk::Repo;
use nzfs::store::object::RemoteOptions;
use nzfs::write::{WriteError, netcdf_group};

/// A model's output as CDL: a record dimension with three records, fixed
/// and record variables of every classic type, a fill value written as
/// `_`, and global, text and numeric attributes.
const CDL: &str = r#"netcdf out {
dimensions:
	time = UNLIMITED ; // (3 currently)
	lat = 4 ;
	lon = 5 ;
variables:
	double time(time) ;
		time:units = "days since 2000-01-01" ;
	float lat(lat) ;
		lat:units = "degrees_north" ;
	int lon(lon) ;
	float t2m(time, lat, lon) ;
		t2m:_FillValue = -999.f ;
		t2m:units = "K" ;
		t2m:valid_range = 180.f, 340.f ;
	short counts(time) ;
	byte flags(lat, lon) ;
		flags:flag_values = 0b, 1b ;
	double scale ;
		scale:long_name = "one value" ;

// global attributes:
		:title = "a time mean" ;
		:version = 3 ;
data:

 time = 0.5, 1.5, 2.5 ;

 lat = -45, -15, 15, 45 ;

 lon = 0, 72, 144, 216, 288 ;

 t2m =
  250.5, 251.25, 252, 253, 254,
  255, _, 257, 258, 259,
  260, 261, 262, 263, 264,
  265, 266, 267, 268, 269.125,
  270, 271, 272, 273, 274,
  275, 276, 277, 278, 279,
  280, 281, 282, 283, 284,
  285, 286, 287, _, 289,
  290, 291, 292, 293, 294,
  295, 296, 297, 298, 299,
  300, 301, 302, 303, 304,
  305, 306, 307, 308, 309.75 ;

 counts = 1, -2, 32767 ;

 flags =
  0, 1, 0, 1, 0,
  1, 0, 1, 0, 1,
  0, 0, 0, 0, 0,
  1, 1, 1, 1, -128 ;

 scale = 0.001 ;
}
"#;

/// CDF-5 adds these variables: unsigned and 64-bit integers. (Debian 12's
/// ncgen writes `int64` as `int` in a CDF-5 file; the comparison is with
/// what it wrote.)
const CDL5_VARS: &str = "\tubyte u8(lat) ;
\tuint64 big(lon) ;
\t\tbig:note = \"past int64\" ;
\tint64 neg(lat) ;
";

/// And their values.
const CDL5_DATA: &str = "
 u8 = 0, 1, 254, 255 ;

 big = 0, 1, 9223372036854775808, 18446744073709551615, 7 ;

 neg = -9223372036854775807, -1, 0, 9223372036854775807 ;
";

/// A group with nothing in it.
const EMPTY_GROUP: &[u8] = br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (apt-get install netcdf-bin)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ncgen -k KIND` of `cdl` into `dir/name.nc`.
fn ncgen(dir: &Path, name: &str, kind: &str, cdl: &str) -> PathBuf {
    let text = dir.join(format!("{name}.cdl"));
    std::fs::write(&text, cdl).unwrap();
    let nc = dir.join(format!("{name}.nc"));
    run(Command::new("ncgen").args(["-k", kind, "-o"]).arg(&nc).arg(&text));
    nc
}

/// ncdump's `data:` section of `nc`, one value list per variable, sorted by
/// name (the order of variables may differ).
fn data_of(nc: &Path) -> Vec<String> {
    let dump = run(Command::new("ncdump").arg(nc));
    let data = dump
        .split("\ndata:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no data in {dump}"));
    let mut vars: Vec<String> = data
        .trim_end()
        .trim_end_matches('}')
        .split(" ;")
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|v| !v.is_empty())
        .collect();
    vars.sort();
    vars
}

fn options() -> RemoteOptions {
    common::repos::local_options()
}

/// A copy of the fixture repository in `dir`.
fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    repo
}

#[test]
fn a_classic_netcdf_file_becomes_a_group_in_one_commit_that_reads_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = repository(dir.path());
    let source = repo_dir.to_str().unwrap();
    let cdl5 = CDL
        .replacen("variables:\n", &format!("variables:\n{CDL5_VARS}"), 1)
        .replacen("data:\n", &format!("data:\n{CDL5_DATA}"), 1);
    let files = [
        ("cdf1", ncgen(dir.path(), "cdf1", "classic", CDL)),
        ("cdf2", ncgen(dir.path(), "cdf2", "64-bit offset", CDL)),
        ("cdf5", ncgen(dir.path(), "cdf5", "cdf5", &cdl5)),
    ];
    for (name, nc) in &files {
        let repo = Repo::open(source, &options()).unwrap();
        let file = std::fs::File::open(nc).unwrap();
        let before = refs(&repo_dir);
        let (id, written) = netcdf_group(&repo, "main", name, &file, &format!("{name}.nc by test")).unwrap();
        assert_eq!(id.len(), 20, "{id}");
        assert_ne!(refs(&repo_dir), before, "{name}: the branch moved");
        assert_eq!(written.arrays, if *name == "cdf5" { 10 } else { 7 }, "{name}");
    }
    let m = Mount::at(&repo_dir, &[]);
    for (name, nc) in &files {
        let group = m.mp.join(name);
        let shown = group.join(format!("{name}.nc"));
        assert_eq!(
            data_of(&shown),
            data_of(nc),
            "{name}: ncdump of the group's .nc and of the file"
        );
        let cdl = std::fs::read_to_string(group.join("header.cdl")).unwrap();
        for line in [
            "time = 3 ;",
            "lat = 4 ;",
            "float t2m(time, lat, lon) ;",
            "t2m:_FillValue = -999.f ;",
            "t2m:units = \"K\" ;",
            "short counts(time) ;",
            "byte flags(lat, lon) ;",
            ":title = \"a time mean\" ;",
            "double scale ;",
        ] {
            assert!(cdl.contains(line), "{name}: {line:?} not in\n{cdl}");
        }
        if *name == "cdf5" {
            for line in ["ubyte u8(lat) ;", "uint64 big(lon) ;"] {
                assert!(cdl.contains(line), "{name}: {line:?} not in\n{cdl}");
            }
        }
    }
    // The commit's message is the snapshot's: the mount's header names it.
    let root = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    assert!(root.contains("cdf5.nc by test"), "{root}");
}

#[test]
fn a_file_that_is_no_classic_netcdf_or_a_name_taken_leaves_the_branch_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = repository(dir.path());
    let repo = Repo::open(repo_dir.to_str().unwrap(), &options()).unwrap();
    let before = refs(&repo_dir);
    // Neither netCDF classic nor netCDF-4 (HDF5), which is taken
    // (tests/write_netcdf4.rs).
    let notes = dir.path().join("notes.nc");
    std::fs::write(&notes, "these are notes").unwrap();
    let e = netcdf_group(&repo, "main", "notes", &std::fs::File::open(&notes).unwrap(), "m").unwrap_err();
    assert!(
        e.to_string().contains("not a netCDF classic file") && e.to_string().contains("HDF5"),
        "{e}"
    );
    // A text variable whose only dimension is the record dimension (its
    // strings would grow by record): refused before anything is written.
    let text = CDL.replacen("variables:\n", "variables:\n\tchar note(time) ;\n", 1);
    let nc = ncgen(dir.path(), "text", "classic", &text);
    let e = netcdf_group(&repo, "main", "text", &std::fs::File::open(&nc).unwrap(), "m").unwrap_err();
    assert!(e.to_string().contains("char variable \"note\""), "{e}");
    // A group that is there already (the fixture's main has "a").
    let nc = ncgen(dir.path(), "ok", "classic", CDL);
    let m = Mount::at(&repo_dir, &[]);
    let existing = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .unwrap();
    drop(m);
    let e = netcdf_group(&repo, "main", &existing, &std::fs::File::open(&nc).unwrap(), "m").unwrap_err();
    assert!(matches!(e, WriteError::Exists(_)), "{e}");
    assert_eq!(refs(&repo_dir), before, "the branch did not move");
}

#[test]
fn a_commit_that_conflicts_with_one_made_meanwhile_fails_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = repository(dir.path());
    let repo = Repo::open(repo_dir.to_str().unwrap(), &options()).unwrap();
    let nc = ncgen(dir.path(), "g", "classic", CDL);
    // A commit begins on the tip, and sets the group g ...
    let first = repo.begin("main").unwrap();
    first.put("g/zarr.json", EMPTY_GROUP.to_vec()).unwrap();
    // ... while another writer commits a group g of its own.
    let other = Repo::open(repo_dir.to_str().unwrap(), &options()).unwrap();
    netcdf_group(
        &other,
        "main",
        "g",
        &std::fs::File::open(&nc).unwrap(),
        "the other writer",
    )
    .unwrap();
    let moved = refs(&repo_dir);
    let e = first.commit("the first writer").unwrap_err();
    assert!(
        matches!(e, nzfs::store::StoreError::Changed(_)) && e.to_string().contains("conflicts"),
        "{e}"
    );
    assert_eq!(refs(&repo_dir), moved, "the branch is as the other writer left it");
    // A commit that touches something else is rebased onto the new tip.
    let third = repo.begin("main").unwrap();
    third.put("h/zarr.json", EMPTY_GROUP.to_vec()).unwrap();
    let nc2 = ncgen(dir.path(), "k", "classic", CDL);
    netcdf_group(&other, "main", "k", &std::fs::File::open(&nc2).unwrap(), "meanwhile").unwrap();
    third.commit("rebased").unwrap();
    let m = Mount::at(&repo_dir, &[]);
    for group in ["g", "h", "k"] {
        assert!(m.mp.join(group).is_dir(), "{group}");
    }
}

/// Text: station names, a one-character flag and a record variable of
/// codes, as CF writes strings (the last dimension their length).
const TEXT_CDL: &str = r#"netcdf text {
dimensions:
	time = UNLIMITED ; // (2 currently)
	station = 3 ;
	name_len = 8 ;
variables:
	char station_name(station, name_len) ;
		station_name:long_name = "station name" ;
	char flag ;
	char code(time, name_len) ;
	float obs(time, station) ;
data:

 station_name = "Lindenbe", "Payerne", "Ny" ;

 flag = "y" ;

 code = "a1", "b22" ;

 obs = 1, 2, 3, 4, 5, 6 ;
}
"#;

#[test]
fn text_variables_become_fixed_length_strings_that_read_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = repository(dir.path());
    let repo = Repo::open(repo_dir.to_str().unwrap(), &options()).unwrap();
    let nc = ncgen(dir.path(), "text", "classic", TEXT_CDL);
    let (_, written) = netcdf_group(&repo, "main", "text", &std::fs::File::open(&nc).unwrap(), "m").unwrap();
    assert_eq!(written.arrays, 4);
    let m = Mount::at(&repo_dir, &[]);
    let shown = m.mp.join("text/text.nc");
    assert_eq!(
        data_of(&shown),
        data_of(&nc),
        "ncdump of the group's .nc and of the file"
    );
    // Each is an array of strings over the other dimensions, of the
    // strings' length, the bytes as written.
    let cdl = std::fs::read_to_string(m.mp.join("text/station_name/header.cdl")).unwrap();
    assert!(cdl.contains("station_name:long_name = \"station name\" ;"), "{cdl}");
    let names = std::fs::read(m.mp.join("text/station_name/data.bin")).unwrap();
    assert_eq!(names, b"LindenbePayerne\0Ny\0\0\0\0\0\0");
    assert_eq!(std::fs::read(m.mp.join("text/flag/data.bin")).unwrap(), b"y");
}

/// The group document nzfs writes (a `mkdir`, a classic file's group)
/// reads back, through the parser every mount uses, as a Zarr v3 group
/// with its attributes.
#[test]
fn a_written_group_document_reads_back_as_the_group_it_describes() {
    use nzfs::json::Value;
    use nzfs::zarr::metadata::NodeMetadata;
    let attrs = nzfs::json::parse(br#"{"title": "t", "n": [1, 2]}"#).unwrap();
    let doc = nzfs::zarr::documents::group_document(attrs.clone());
    match NodeMetadata::parse(&doc).unwrap() {
        NodeMetadata::Group(g) => {
            assert_eq!(g.zarr_format, 3);
            assert_eq!(Value::Object(g.attributes.clone()), attrs);
        }
        other => panic!("not a group: {other:?}"),
    }
}
