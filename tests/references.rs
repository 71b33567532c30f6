//! Kerchunk and VirtualiZarr reference sets, mounted. The sets
//! and their netCDF-4/HDF5 sources were written by the real tools
//! (scripts/fixtures_kerchunk.py: kerchunk 0.2.10, VirtualiZarr 2.8,
//! netCDF4-python, h5py), and the expected values are what xarray reads
//! through fsspec's `reference://` from the same sets, which the script
//! checked against netCDF4-python and h5py reading the sources.
//!
//! Each set is read three ways: its targets local, on moto's S3 server and
//! on nginx over HTTP; the sets themselves are read from S3 too. Every
//! array's `data.bin` must equal the expected values, every `header.cdl`
//! must pass `ncgen`, and netCDF-C (`ncdump`) must read the same values
//! from the group's `.nc`.

mod common;

use std::path::{Path, PathBuf};

use common::mount::{Mount, read_paths};
use common::netcdf_tools::{ncdump, ncgen};

/// Each set, and the directory of its expected values.
const SETS: [(&str, &str); 8] = [
    ("refs.json", "refs.json"),
    ("refs.json.gz", "refs.json"),
    ("refs.parq", "refs.json"),
    ("multi.json", "multi.json"),
    ("multi.parq", "multi.json"),
    ("h5.json", "h5.json"),
    ("gen.json", "gen.json"),
    ("vz.json", "vz.json"),
];

fn kerchunk() -> PathBuf {
    common::data_dir().join("kerchunk")
}

/// `(array path, expected bytes, element size)` of a set.
fn expected(name: &str) -> Vec<(String, Vec<u8>)> {
    let root = kerchunk().join("expected").join(name);
    let mut out = Vec::new();
    for f in common::servers::files(&root) {
        let rel = f.strip_prefix(&root).unwrap().to_str().unwrap();
        out.push((rel.trim_end_matches(".bin").to_string(), std::fs::read(&f).unwrap()));
    }
    assert!(!out.is_empty(), "no expected values for {name}");
    out
}

/// The element type of an array, from the first variable line of its
/// `header.cdl` (`float sst(time, lat, lon) ;`).
fn cdl_type(header: &str) -> String {
    let after = header.split("variables:").nth(1).expect("a variables section");
    after.split_whitespace().next().unwrap().to_string()
}

/// The values of `var` in `nc` as netCDF-C prints them at full precision
/// (`_` for a fill value).
fn ncdump_values(nc: &Path, var: &str) -> Vec<String> {
    let text = ncdump(&["-p", "9,17", "-v", var], nc);
    let data = text.split("data:").nth(1).expect("a data section");
    let body = data
        .split_once(&format!(" {var} ="))
        .or_else(|| data.split_once(&format!("{var} =")))
        .unwrap_or_else(|| panic!("{var} in {text}"))
        .1;
    body.split(';')
        .next()
        .unwrap()
        .split([',', '\n', ' ', '\t'])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The values of little-endian `bytes` of CDL type `ty`, as numbers.
fn numbers(bytes: &[u8], ty: &str) -> Vec<f64> {
    match ty {
        "float" => bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        "double" => bytes
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        "int" => bytes
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        other => panic!("type {other}"),
    }
}

fn ncgen_accepts(cdl: &Path) {
    let dir = tempfile::tempdir().unwrap();
    ncgen(cdl, &dir.path().join("x.nc"));
}

/// Check a mount of a set against the set's expected values: `data.bin`,
/// `ncgen` on every header, and netCDF-C's reading of the group `.nc`.
fn check(m: &Mount, expected_name: &str, label: &str) {
    let mut headers = 0;
    for f in common::servers::files(&m.mp) {
        if f.file_name().is_some_and(|n| n == "header.cdl") {
            ncgen_accepts(&f);
            headers += 1;
        }
    }
    for (array, want) in expected(expected_name) {
        let dir = m.mp.join(&array);
        let got = std::fs::read(dir.join("data.bin")).unwrap_or_else(|e| panic!("{label}: {array}/data.bin: {e}"));
        if cfg!(target_endian = "little") {
            assert_eq!(got, want, "{label}: {array}/data.bin");
        }
        // netCDF-C reads the same values from the array's group file.
        let (group, var) = array
            .rsplit_once('/')
            .map_or((m.mp.clone(), array.as_str()), |(g, v)| (m.mp.join(g), v));
        let nc = std::fs::read_dir(&group)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "nc"))
            .unwrap_or_else(|| panic!("{label}: no .nc in {}", group.display()));
        let ty = cdl_type(&std::fs::read_to_string(dir.join("header.cdl")).unwrap());
        let printed = ncdump_values(&nc, var);
        let want = numbers(&want, &ty);
        assert_eq!(printed.len(), want.len(), "{label}: {array} in {}", nc.display());
        for (p, w) in printed.iter().zip(&want) {
            if p == "_" {
                assert!(*w == -999.0 || *w > 9.9e36, "{label}: {array}: _ for {w}");
            } else {
                let text = p.trim_end_matches(['f', 'L']);
                // A float prints with 9 digits: it reads back as an f32.
                let v: f64 = match ty.as_str() {
                    "float" => text.parse::<f32>().map(f64::from),
                    _ => text.parse::<f64>(),
                }
                .unwrap_or_else(|_| panic!("{p}"));
                assert_eq!(v, *w, "{label}: {array} in {}", nc.display());
            }
        }
    }
    assert!(headers > 0, "{label}: no header.cdl");
}

read_paths!(every_set_reads_as_xarray_reads_it_through_fsspec);
fn every_set_reads_as_xarray_reads_it_through_fsspec() {
    for (set, want) in SETS {
        let m = Mount::at(&kerchunk().join(set), &[]);
        check(&m, want, set);
    }
    // `nzfs check` reads a Parquet set and its coordinate values (exit 1:
    // kerchunk writes no NZ-1.0 conventions attribute, so the set is plain
    // Zarr, in no error but not conforming; 2 would be unreadable).
    let out = common::mount::nzfs(&["check", kerchunk().join("multi.parq").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("dimension coordinates: /lat, /lon, /time") && text.contains("does not declare NZ-1.0"),
        "{text}"
    );
}

/// A copy of `set` (a JSON file of tests/data/kerchunk) in `dir`, its
/// references changed by `edit`.
fn edited(set: &str, dir: &Path, edit: impl Fn(&mut nzfs::json::Value)) -> PathBuf {
    use nzfs::json::{self, Value};
    let mut doc = json::parse(&std::fs::read(kerchunk().join(set)).unwrap()).unwrap();
    if let Value::Object(top) = &mut doc {
        for (k, v) in top.iter_mut() {
            if k == "refs" {
                edit(v);
            }
        }
    }
    let path = dir.join(set);
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn set_ref(refs: &mut nzfs::json::Value, key: &str, value: nzfs::json::Value) {
    if let nzfs::json::Value::Object(entries) = refs {
        for (k, v) in entries.iter_mut() {
            if k == key {
                *v = value.clone();
            }
        }
    }
}

read_paths!(bad_references_fail_their_own_chunks_only);
/// A missing target, a range past its end, a malformed template and a
/// corrupt Parquet record are EIO on the chunks that use them, with a log
/// line naming the key and the target; the rest of the set reads.
fn bad_references_fail_their_own_chunks_only() {
    use nzfs::json::Value;
    let dir = tempfile::tempdir().unwrap();
    for f in ["day0.nc", "day1.nc", "day2.nc"] {
        std::fs::copy(kerchunk().join(f), dir.path().join(f)).unwrap();
    }
    let url = |u: &str, o: u64, n: u64| Value::Array(vec![Value::Str(u.into()), Value::UInt(o), Value::UInt(n)]);
    let set = edited("multi.json", dir.path(), |refs| {
        set_ref(refs, "sst/0.0.0", url("nope.nc", 0, 10));
        set_ref(refs, "sst/0.0.1", url("day0.nc", 17000, 1000));
        set_ref(refs, "sst/0.1.0", url("{{ missing }}", 0, 10));
    });
    let m = Mount::at(&set, &[]);
    let chunk = |c: &str| std::fs::read(m.mp.join("sst").join(format!("{c}.bin")));
    for c in ["0.0.0", "0.0.1", "0.1.0"] {
        let e = chunk(c).expect_err(c);
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{c}: {e}");
    }
    let want = expected("multi.json");
    let sst = &want.iter().find(|(a, _)| a == "sst").unwrap().1;
    // Chunk 0.1.1 is rows 3..6, columns 4..8 of day 0.
    let got = chunk("0.1.1").unwrap();
    let row = |r: usize| &sst[(r * 8 + 4) * 4..(r * 8 + 8) * 4];
    assert_eq!(got, [row(3), row(4), row(5)].concat());
    assert_eq!(
        std::fs::read(m.mp.join("lat/data.bin")).unwrap(),
        want.iter().find(|(a, _)| a == "lat").unwrap().1
    );
    let log = m.log();
    for needle in ["sst/0.0.0", "nope.nc", "sst/0.0.1", "day0.nc", "sst/0.1.0", "missing"] {
        assert!(log.contains(needle), "log lacks {needle}: {log}");
    }

    // A corrupt record file of a Parquet set: EIO on its chunks, the
    // others read.
    let parq = dir.path().join("multi.parq");
    common::copy_dir(&kerchunk().join("multi.parq"), &parq);
    std::fs::write(parq.join("sst/refs.1.parq"), b"PAR1 not a parquet file PAR1").unwrap();
    let m = Mount::at(&parq, &[]);
    // Record 1 holds chunks 2 and 3 (record_size 2): 0.1.0 and 0.1.1.
    for c in ["0.1.0", "0.1.1"] {
        let e = std::fs::read(m.mp.join("sst").join(format!("{c}.bin"))).expect_err(c);
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{c}: {e}");
    }
    assert_eq!(
        std::fs::read(m.mp.join("sst/0.0.0.bin")).unwrap(),
        [&sst[0..16], &sst[32..48], &sst[64..80]].concat()
    );
    assert!(m.log().contains("refs.1.parq"), "{}", m.log());
}

read_paths!(targets_elsewhere_need_allowing);
/// Targets outside the set's directory are read only when allowed with
/// `virtual_chunks=`: without it, EIO and a log line with the option.
fn targets_elsewhere_need_allowing() {
    use nzfs::json::Value;
    let dir = tempfile::tempdir().unwrap();
    let sets = dir.path().join("sets");
    std::fs::create_dir(&sets).unwrap();
    let data = kerchunk().canonicalize().unwrap();
    let set = edited("multi.json", &sets, |refs| {
        if let Value::Object(entries) = refs {
            for (_, v) in entries.iter_mut() {
                if let Value::Array(items) = v
                    && let Some(Value::Str(u)) = items.first_mut()
                {
                    *u = format!("{}/{u}", data.display());
                }
            }
        }
    });
    let m = Mount::at(&set, &[]);
    let e = std::fs::read(m.mp.join("sst/data.bin")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    assert!(
        m.log().contains(&format!("virtual_chunks=file://{}/", data.display())),
        "{}",
        m.log()
    );
    drop(m);
    let allow = format!("virtual_chunks=file://{}/", data.display());
    let m = Mount::at(&set, &["--store-option", &allow]);
    check(&m, "multi.json", "absolute local targets");
}

read_paths!(keys_show_what_their_targets_allow);
/// A key that reads a target shows the meet of the reference file's mode,
/// the target's and every directory's on the way, so another user of a
/// root `allow_other` mount is refused, through the chunk file, `data.bin`
/// and the `.nc`, exactly what a direct `cat` of the target refuses.
fn keys_show_what_their_targets_allow() {
    use std::os::unix::fs::PermissionsExt;
    let users = common::users::Users::create();
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let zarray = r#"{"zarr_format":2,"shape":[16],"chunks":[16],"dtype":"|u1","compressor":null,"filters":null,"fill_value":0,"order":"C"}"#;
    let bytes: Vec<u8> = (0..16u8).map(|i| i * 7).collect();
    for (d, f, dm, fm) in [
        ("public", "pub.bin", 0o755, 0o644),
        ("private", "p.bin", 0o755, 0o600),
        ("locked", "q.bin", 0o700, 0o644),
    ] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
        std::fs::write(dir.path().join(d).join(f), &bytes).unwrap();
        mode(&dir.path().join(d).join(f), fm);
        mode(&dir.path().join(d), dm);
    }
    let quoted = |s: &str| format!("{s:?}");
    let mut refs = vec![format!("\".zgroup\": {}", quoted(r#"{"zarr_format":2}"#))];
    for (name, target) in [
        ("open", "public/pub.bin"),
        ("priv", "private/p.bin"),
        ("lock", "locked/q.bin"),
    ] {
        refs.push(format!("\"{name}/.zarray\": {}", quoted(zarray)));
        refs.push(format!("\"{name}/0\": [\"{target}\", 0, 16]"));
    }
    let doc = format!(r#"{{"version": 1, "refs": {{{}}}}}"#, refs.join(", "));
    let set = dir.path().join("refs.json");
    std::fs::write(&set, doc).unwrap();
    mode(&set, 0o644);
    mode(dir.path(), 0o755);
    // The direct reads, as the other user: the rule's premise.
    assert!(common::users::cat_as(&users.other, &dir.path().join("public/pub.bin")).is_ok());
    for t in ["private/p.bin", "locked/q.bin"] {
        let r = common::users::cat_as(&users.other, &dir.path().join(t));
        assert!(matches!(&r, Err(e) if e.contains("Permission denied")), "{t}: {r:?}");
    }
    let m = Mount::at(&set, &["-o", "allow_other"]);
    mode(m.dir.path(), 0o755);
    let nc: Vec<PathBuf> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "nc"))
        .collect();
    assert_eq!(nc.len(), 1);
    for f in ["open/0.bin", "open/data.bin"] {
        let got = common::users::cat_as(&users.other, &m.mp.join(f));
        assert_eq!(got.as_deref(), Ok(&bytes[..]), "{f}");
    }
    for f in [
        m.mp.join("priv/0.bin"),
        m.mp.join("priv/data.bin"),
        m.mp.join("lock/0.bin"),
        m.mp.join("lock/data.bin"),
        nc[0].clone(),
    ] {
        // Root reads it: the bytes are there, only refused.
        assert!(
            std::fs::read(&f).unwrap().windows(16).any(|w| w == bytes),
            "{}",
            f.display()
        );
        let r = common::users::cat_as(&users.other, &f);
        assert!(
            matches!(&r, Err(e) if e.contains("Permission denied")),
            "{}: {r:?}",
            f.display()
        );
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o400,
            "{}",
            f.display()
        );
    }
}

#[cfg(feature = "remote")]
mod remote {
    use super::*;
    use common::servers::{Moto, Nginx, Proxy};

    /// The sets and their sources on S3, read there (relative targets) and
    /// from a local set whose targets are `s3://` URLs.
    #[test]
    fn sets_and_targets_on_s3() {
        let Some(moto) = Moto::start() else { return };
        assert_eq!(moto.request("PUT", "/refs", b""), 200);
        moto.upload("refs", &kerchunk(), "k");
        let opts = moto.options();
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        for (set, want) in SETS {
            let url = format!("s3://refs/k/{set}");
            let m = Mount::at(Path::new(&url), &opts);
            check(&m, want, &url);
            // A prefix allowed for targets elsewhere is the set's option,
            // not object_store's (a Parquet set refused it as unknown).
            let mut allowed = opts.clone();
            allowed.extend(["--store-option", "virtual_chunks=s3://refs/elsewhere/"]);
            let m = Mount::at(Path::new(&url), &allowed);
            check(&m, want, &format!("{url} with virtual_chunks"));
        }
        // A local set with s3:// targets.
        let dir = tempfile::tempdir().unwrap();
        let set = edited("multi.json", dir.path(), |refs| absolute(refs, "s3://refs/k"));
        let m = Mount::at(&set, &opts);
        assert!(std::fs::read(m.mp.join("sst/data.bin")).is_err());
        assert!(m.log().contains("virtual_chunks=s3://refs/"), "{}", m.log());
        drop(m);
        let mut allowed = opts.clone();
        allowed.extend(["--store-option", "virtual_chunks=s3://refs/k/"]);
        let m = Mount::at(&set, &allowed);
        check(&m, "multi.json", "s3:// targets");
    }

    fn absolute(refs: &mut nzfs::json::Value, base: &str) {
        use nzfs::json::Value;
        if let Value::Object(entries) = refs {
            for (_, v) in entries.iter_mut() {
                if let Value::Array(items) = v
                    && let Some(Value::Str(u)) = items.first_mut()
                {
                    *u = format!("{base}/{u}");
                }
            }
        }
    }

    /// The sets over HTTP (nginx serving tests/data), and a local set with
    /// `http://` targets.
    #[test]
    fn sets_and_targets_over_http() {
        let Some(nginx) = Nginx::start() else { return };
        for (set, want) in SETS {
            let url = format!("http://127.0.0.1:{}/kerchunk/{set}", nginx.port);
            let m = Mount::at(Path::new(&url), &[]);
            check(&m, want, &url);
        }
        let dir = tempfile::tempdir().unwrap();
        let base = format!("http://127.0.0.1:{}/kerchunk", nginx.port);
        let set = edited("h5.json", dir.path(), |refs| absolute(refs, &base));
        let allow = format!("virtual_chunks={base}/");
        let m = Mount::at(&set, &["--store-option", &allow]);
        check(&m, "h5.json", "http:// targets");
    }

    /// Adjacent chunks of one target are fetched in one request: reading
    /// every chunk of `sst` from S3 takes fewer requests than chunks.
    #[test]
    fn adjacent_chunks_of_a_target_are_read_together() {
        let Some(moto) = Moto::start() else { return };
        assert_eq!(moto.request("PUT", "/refs", b""), 200);
        moto.upload("refs", &kerchunk(), "k");
        let proxy = Proxy::start(moto.port);
        let opts = common::servers::s3_options(proxy.port, Some(("test", "test")));
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        let m = Mount::at(Path::new("s3://refs/k/multi.json"), &opts);
        proxy.reset_counts();
        let got = std::fs::read(m.mp.join("sst/data.bin")).unwrap();
        assert_eq!(
            got,
            expected("multi.json").into_iter().find(|(a, _)| a == "sst").unwrap().1
        );
        let reads: Vec<String> = proxy
            .request_log()
            .into_iter()
            .filter(|r| r.starts_with("GET") && r.contains("/day"))
            .collect();
        // 12 chunks in 3 files, 4 next to each other in each.
        assert!(!reads.is_empty() && reads.len() <= 6, "{reads:?}");
    }
}

read_paths!(a_set_pointing_outside_says_so_when_mounted);
/// A JSON set whose references point outside its directory says so at
/// once, on `nzfs mount`'s own output: how many, one of them, and the exact
/// option, which then reads them. Before, the mount said nothing and only
/// the log named a prefix.
fn a_set_pointing_outside_says_so_when_mounted() {
    let tmp = tempfile::tempdir().unwrap();
    let (set, data) = (tmp.path().join("set"), tmp.path().join("data"));
    std::fs::create_dir_all(&set).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("blob"), b"abcdefgh").unwrap();
    let blob = data.join("blob");
    let refs = format!(
        r#"{{"version": 1, "refs": {{".zgroup": "{{\"zarr_format\": 2}}",
        "x/.zarray": "{{\"shape\": [8], \"chunks\": [4], \"dtype\": \"|u1\", \"compressor\": null, \"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}}",
        "x/0": ["{b}", 0, 4], "x/1": ["{b}", 4, 4]}}}}"#,
        b = blob.display()
    );
    std::fs::write(set.join("refs.json"), refs).unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    /// Unmounts (lazily) on drop, should an assertion fail while mounted.
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            if nzfs::daemon::is_mount_point(self.0) {
                let _ = std::process::Command::new("fusermount3")
                    .args(["-u", "-z"])
                    .arg(self.0)
                    .status();
            }
        }
    }
    let _unmount = Unmount(&mp);
    let log = tmp.path().join("log");
    let (file, mp_s, log_s) = (set.join("refs.json"), mp.to_str().unwrap(), log.to_str().unwrap());
    let out = common::mount::nzfs(&["mount", file.to_str().unwrap(), mp_s, "--log-file", log_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let option = format!("virtual_chunks=file://{}/", data.display());
    assert!(said.contains("2 of 4 references point outside"), "{said}");
    assert!(said.contains("x/0 -> ") && said.contains(&option), "{said}");
    assert!(std::fs::read(mp.join("x/data.bin")).is_err());
    assert!(common::mount::nzfs(&["unmount", mp_s]).status.success());
    // The option it names reads them.
    let out = common::mount::nzfs(&[
        "mount",
        file.to_str().unwrap(),
        mp_s,
        "--log-file",
        log_s,
        "--store-option",
        &option,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("point outside"));
    assert_eq!(std::fs::read(mp.join("x/data.bin")).unwrap(), b"abcdefgh");
    assert!(common::mount::nzfs(&["unmount", mp_s]).status.success());
}
