//! header.cdl against the real netCDF tools: every header of every fixture
//! goes through `ncgen -k nc4`, and `ncdump -hs` of the result must print
//! the header back, line for line (the `// nzfs:` reading guide and the
//! file-level `_NCProperties`-style attributes aside). The headers are
//! therefore exactly what ncdump says of the netCDF-4 file they describe.

mod common;

use std::path::Path;
use std::process::Command;

use nzfs::store::FilesystemStore;
use nzfs::zarr::hierarchy::Hierarchy;

const FILE_LEVEL: &[&str] = &["_NCProperties", "_SuperblockVersion", "_IsNetcdf4", "_Format"];

/// ncgen the text, then ncdump -hs it; `Err` carries ncgen's complaint.
fn round_trip(cdl: &str, dir: &Path, tag: &str) -> Result<String, String> {
    let src = dir.join(format!("{tag}.cdl"));
    let nc = dir.join(format!("{tag}.nc"));
    std::fs::write(&src, cdl).unwrap();
    let out = Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(&nc)
        .arg(&src)
        .output()
        .expect("ncgen must be installed (apt-get install netcdf-bin)");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let dump = Command::new("ncdump").arg("-hs").arg(&nc).output().expect("ncdump");
    assert!(dump.status.success());
    Ok(String::from_utf8(dump.stdout).unwrap())
}

/// Our header without the reading guide.
fn without_guide(cdl: &str) -> Vec<String> {
    cdl.lines()
        .filter(|l| !l.trim_start().starts_with("// nzfs:"))
        .map(str::to_string)
        .collect()
}

/// ncdump's text without the file-level special attributes (and the
/// "global attributes" heading when nothing else is under it).
fn without_file_level(dump: &str) -> Vec<String> {
    let mut lines: Vec<String> = dump
        .lines()
        .filter(|l| {
            !FILE_LEVEL
                .iter()
                .any(|a| l.trim_start().starts_with(&format!(":{a} =")))
        })
        .map(str::to_string)
        .collect();
    if let Some(i) = lines.iter().position(|l| l == "// global attributes:") {
        let next = lines.get(i + 1).map(String::as_str);
        if next.is_none_or(|n| !n.starts_with("\t\t")) {
            lines.remove(i);
            lines.remove(i - 1); // the blank line before it
        }
    }
    lines
}

#[test]
fn every_header_is_what_ncdump_prints_of_its_ncgen_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for store in common::stores(&common::manifest()) {
        let s = FilesystemStore::new(common::data_dir().join(&store));
        let h = Hierarchy::open(&s).unwrap();
        for (id, node) in h.nodes.iter().enumerate() {
            if matches!(node.kind, nzfs::zarr::hierarchy::NodeKind::Broken { .. }) {
                continue;
            }
            let title = if id == 0 {
                store.trim_end_matches(".zarr").to_string()
            } else {
                node.name.clone()
            };
            let cdl = nzfs::cdl::render(&h, id, &title);
            let tag = format!("h{checked}");
            match round_trip(&cdl, tmp.path(), &tag) {
                Err(e) => failures.push(format!("{store}/{}: ncgen rejected it: {e}\n{cdl}", node.path)),
                Ok(dump) => {
                    let mut ours = without_guide(&cdl);
                    let mut theirs = without_file_level(&dump);
                    // ncdump names the dataset after the file.
                    ours.remove(0);
                    theirs.remove(0);
                    if ours != theirs {
                        failures.push(format!(
                            "{store}/{}:\n--- ours\n{}\n--- ncdump -hs\n{}",
                            node.path,
                            ours.join("\n"),
                            theirs.join("\n")
                        ));
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} headers differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(checked > 100, "checked {checked} headers");
}

fn ncdump_h(nc: &Path) -> Vec<String> {
    let out = Command::new("ncdump").arg("-h").arg(nc).output().expect("ncdump");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// `ncdump -h` (sorted lines) of the netCDF-4 file `ncgen` makes of the
/// store's root header.
fn ncdump_of_header(store: &str, title: &str) -> (Vec<String>, String) {
    let s = FilesystemStore::new(common::data_dir().join(store));
    let h = Hierarchy::open(&s).unwrap();
    let cdl = nzfs::cdl::render(&h, 0, title);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join(format!("{title}.cdl"));
    let nc = tmp.path().join("from_header.nc");
    std::fs::write(&src, &cdl).unwrap();
    let out = Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(&nc)
        .arg(&src)
        .output()
        .expect("ncgen");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (ncdump_h(&nc), cdl)
}

#[test]
fn the_root_header_says_what_ncdump_says_of_xarrays_netcdf_file() {
    // scripts/make_fixtures.py wrote the same xarray Dataset (with a
    // subgroup, a scalar coordinate, _FillValue on floats, int and float
    // list attributes, a string with a newline and quotes) both ways.
    let (ours, cdl) = ncdump_of_header("differential.zarr", "differential");
    let xarrays = ncdump_h(&common::data_dir().join("differential.nc"));
    assert!(xarrays.iter().any(|l| l.contains("group: sub")) && xarrays.iter().any(|l| l.contains("double height ;")));
    assert_eq!(ours, xarrays, "\n{cdl}");
}

#[test]
fn an_nczarr_header_says_what_ncdump_says_of_the_file_nccopy_copied() {
    // nczarr_src.nc has a subgroup using a dimension of its parent, a
    // dimension no variable uses, typed attributes (1b, 0.5f, 3s) and a
    // scalar; nccopy wrote it as v2_nczarr.zarr (scripts/fixtures_v2.py).
    let (ours, cdl) = ncdump_of_header("v2_nczarr.zarr", "nczarr_src");
    let source = ncdump_h(&common::data_dir().join("nczarr_src.nc"));
    assert!(source.iter().any(|l| l.contains("bnds = 2")) && source.iter().any(|l| l.contains("1b, 2b")));
    assert_eq!(ours, source, "\n{cdl}");
}
