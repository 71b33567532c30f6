//! A newcomer's mistakes get helpful answers, through the real
//! binary and real mounts: a misspelled `-o` option, swapped arguments, a
//! misspelled command, a closed pipe, relative paths, log colours and
//! bounds, SI sizes, `--version`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::mount::nzfs;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nzfs"))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn sample() -> String {
    common::data_dir().join("sample.zarr").to_string_lossy().into_owned()
}

#[test]
fn a_misspelled_mount_option_names_itself_and_the_nearest() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().to_str().unwrap();
    let out = nzfs(&["mount", "-o", "ro,alow_other", &sample(), mp]);
    // A usage error, as `--bogus` is (docs/usage.md): exit 2.
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown mount option `alow_other`") && err.contains("`allow_other`"),
        "{err}"
    );
    assert!(!err.contains("rootmode") && !err.contains("fd="), "{err}");
    let out = nzfs(&["mount", "-o", "frobnicate", &sample(), mp]);
    assert!(
        stderr(&out).contains("unknown mount option `frobnicate`"),
        "{}",
        stderr(&out)
    );
    // mount(8)'s generic options are still accepted (and ignored).
    let m = common::mount::Mount::new("sample.zarr", &["-o", "defaults,noauto,_netdev,x-systemd.automount"]);
    assert!(m.mp.join("header.cdl").is_file());
}

/// The exit status says what kind of failure it was, for scripts and the
/// CSI plugin: 3 for a store that is not there, 2 for a usage error, 1 for
/// the rest (here a store that cannot be read).
#[test]
fn the_exit_status_tells_a_missing_store_from_other_failures() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    let mp = mp.to_str().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let unreadable = tmp.path().join("bad.zarr");
    std::fs::create_dir(&unreadable).unwrap();
    std::fs::write(unreadable.join("zarr.json"), "{ not json").unwrap();
    let nowhere = tmp.path().join("nowhere.zarr");
    for (args, code) in [
        (vec!["mount", nowhere.to_str().unwrap(), mp], 3),
        (vec!["mount", empty.to_str().unwrap(), mp], 3),
        (vec!["cdl", nowhere.to_str().unwrap()], 3),
        (vec!["mount", unreadable.to_str().unwrap(), mp], 1),
        (vec!["mount", "--cache-size", "lots", &sample(), mp], 2),
    ] {
        let out = nzfs(&args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn swapped_arguments_are_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = nzfs(&["mount", empty.to_str().unwrap(), &sample()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("look swapped") && err.contains("store comes first"),
        "{err}"
    );
    assert!(!err.contains("is not empty"), "{err}");
}

/// A mount point that holds Zarr metadata is the user's store, whatever
/// the first argument is: the advice never mounts over it (`-o nonempty`).
#[test]
fn a_store_given_as_the_mount_point_is_never_offered_nonempty() {
    let tmp = tempfile::tempdir().unwrap();
    let nope = tmp.path().join("nope");
    let live = common::mount::Mount::new("sample.zarr", &[]);
    let other = tmp.path().join("other.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &other);
    for (first, said) in [
        (nope.to_str().unwrap(), "does not exist"),
        (live.mp.to_str().unwrap(), "is an nzfs mount"),
        (other.to_str().unwrap(), "is itself a Zarr store"),
    ] {
        let out = nzfs(&["mount", first, &sample()]);
        assert!(!out.status.success(), "{first}");
        let err = stderr(&out);
        assert!(err.contains(said), "{first}: {err}");
        assert!(!err.contains("nonempty"), "{first}: {err}");
    }
    let out = nzfs(&["mount", nope.to_str().unwrap(), &sample()]);
    let err = stderr(&out);
    assert!(err.contains("look swapped") && err.contains("mkdir -p"), "{err}");
    // Inside a mount: no -o nonempty either.
    let out = nzfs(&["mount", &sample(), live.mp.join("t2m").to_str().unwrap()]);
    let err = stderr(&out);
    assert!(
        err.contains("inside the nzfs mount") && !err.contains("nonempty"),
        "{err}"
    );
}

#[test]
fn a_misspelled_command_gets_the_nearest_one() {
    let tmp = tempfile::tempdir().unwrap();
    for (typed, meant) in [
        ("mnt", "mount"),
        ("stauts", "status"),
        ("unmuont", "unmount"),
        ("chek", "check"),
    ] {
        let out = nzfs(&[typed, &sample(), tmp.path().to_str().unwrap()]);
        assert!(!out.status.success(), "{typed}");
        let err = stderr(&out);
        assert!(err.contains(&format!("did you mean `{meant}`")), "{typed}: {err}");
        assert!(!err.contains("unexpected argument"), "{typed}: {err}");
    }
    // mount(8)'s helper form (`nzfs SOURCE MOUNTPOINT`) still mounts.
    let out = nzfs(&["store-that-is-not-here.zarr", "/nonexistent-mp"]);
    let err = stderr(&out);
    assert!(err.contains("mount point") && !err.contains("unknown command"), "{err}");
}

/// Beside a `mnt/` folder, `nzfs mnt` and `nzfs mnt STORE` are still typos
/// of `mount` (the folder made `mnt` read as mount(8)'s SOURCE, and the
/// user was invited to mount over their store with `-o nonempty`); so is
/// `install-hlper`, which the old hand-kept list of commands lacked.
#[test]
fn a_typo_beside_a_folder_of_its_name_is_still_a_typo() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("mnt")).unwrap();
    for (args, meant) in [
        (vec!["mnt"], "mount"),
        (vec!["mnt", "data/climate.zarr"], "mount"),
        (vec!["install-hlper"], "install-helper"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nzfs"))
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("did you mean `{meant}`")), "{args:?}: {err}");
        assert!(!err.contains("nonempty"), "{args:?}: {err}");
    }
}

/// A mount point that is the store or lies inside it is refused, and no
/// `-o nonempty` (which would hide the store's own files) is suggested.
#[test]
fn a_mount_point_inside_the_store_is_refused_without_nonempty() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("climate.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &store);
    for (mp, said) in [(store.join("t2m"), "lies inside"), (store.clone(), "is the store")] {
        let out = nzfs(&["mount", store.to_str().unwrap(), mp.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(said) && !err.contains("nonempty"), "{err}");
        assert!(!nzfs::daemon::is_mount_point(&mp));
    }
}

/// A mount point that does not exist (the README's quick start on a fresh
/// machine) gets the command that makes it, quoted where it must be.
#[test]
fn a_missing_mount_point_gets_the_mkdir_that_makes_it() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, quote) in [("nz", ""), ("my data", "'")] {
        let mp = tmp.path().join(name);
        let out = nzfs(&["mount", &sample(), mp.to_str().unwrap()]);
        assert!(!out.status.success());
        let err = stderr(&out);
        let want = format!("mkdir -p {quote}{}{quote}", mp.display());
        assert!(err.contains("does not exist") && err.contains(&want), "{err}");
    }
}

#[test]
fn printing_commands_end_quietly_on_a_closed_pipe() {
    let store = sample();
    for args in [vec!["completions", "bash"], vec!["cdl", store.as_str()]] {
        let mut child = bin()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the output is written (as `head -1`
        // does after its line): every write meets a closed pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?}",
            out.status
        );
    }
}

#[test]
fn relative_paths_are_shown_absolute() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir_all(tmp.path().join("a/mnt")).unwrap();
    let data = common::data_dir();
    // From tests/data: the store as `sample.zarr`, the mount point through `..`.
    let rel_mp = pathdiff(&tmp.path().join("a/mnt"), &data).expect("relative path");
    assert!(rel_mp.starts_with(".."));
    let out = bin()
        .args(["mount", "sample.zarr", rel_mp.to_str().unwrap()])
        .current_dir(&data)
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mp = std::fs::canonicalize(tmp.path().join("a/mnt")).unwrap();
    let status = nzfs(&["status", "--json", mp.to_str().unwrap()]);
    let doc = nzfs::json::parse(&status.stdout).unwrap();
    let store = doc.get("store").and_then(|v| v.as_str()).unwrap().to_string();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let line = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(mp.to_str().unwrap()))
        .map(str::to_string);
    let logs: Vec<String> = std::fs::read_dir(state.join("nzfs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let _ = nzfs(&["unmount", mp.to_str().unwrap()]);
    let want = std::fs::canonicalize(data.join("sample.zarr")).unwrap();
    assert_eq!(store, want.to_str().unwrap());
    assert!(line.unwrap().starts_with(&format!("nzfs:{}", want.display())));
    assert!(logs.iter().all(|l| !l.contains("..")), "{logs:?}");
    assert!(
        logs.iter().any(|l| l.ends_with("_a_mnt.log")),
        "the log is named after the absolute mount point: {logs:?}"
    );
}

/// `to` relative to `base`, for both absolute.
fn pathdiff(to: &Path, base: &Path) -> Option<std::path::PathBuf> {
    let to = std::fs::canonicalize(to).ok()?;
    let base = std::fs::canonicalize(base).ok()?;
    let common = to
        .components()
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = std::path::PathBuf::new();
    for _ in base.components().skip(common) {
        out.push("..");
    }
    for c in to.components().skip(common) {
        out.push(c);
    }
    Some(out)
}

#[test]
fn logs_have_no_colour_codes_and_the_log_directory_stays_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let dir = state.join("nzfs");
    std::fs::create_dir_all(&dir).unwrap();
    // 80 logs of old mounts: 20 not written for a month, 60 recent.
    let month_ago = SystemTime::now() - Duration::from_secs(30 * 86_400);
    for i in 0..80 {
        let p = dir.join(format!("tmp_old{i}.log"));
        std::fs::write(&p, b"x").unwrap();
        let when = if i < 20 {
            month_ago
        } else {
            SystemTime::now() - Duration::from_secs(3600 + i)
        };
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    // This mount point's own log is past the rotation size.
    let own = dir.join(format!(
        "{}.log",
        mp.to_string_lossy().trim_matches('/').replace('/', "_")
    ));
    std::fs::write(&own, vec![b'l'; 9 << 20]).unwrap();
    // A mount that is live, whose log was last written a month ago: kept.
    let live = tmp.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let out = bin()
        .args(["mount", &sample(), live.to_str().unwrap()])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let live_log = dir.join(format!(
        "{}.log",
        live.to_string_lossy().trim_matches('/').replace('/', "_")
    ));
    std::fs::File::options()
        .write(true)
        .open(&live_log)
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let out = bin()
        .args(["mount", &sample(), mp.to_str().unwrap()])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let _ = std::fs::read(mp.join("t2m/data.bin")).unwrap();
    let _ = nzfs(&["unmount", mp.to_str().unwrap()]);
    let _ = nzfs(&["unmount", live.to_str().unwrap()]);
    assert!(live_log.exists(), "the log of a live mount is kept, however old");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let old_left = (0..20).filter(|i| names.contains(&format!("tmp_old{i}.log"))).count();
    assert_eq!(old_left, 0, "logs a month old are removed: {names:?}");
    // 50 old ones, this mount's log and its rotated copy, the live one's.
    assert!(names.len() <= 53, "{} logs kept: {names:?}", names.len());
    let rotated = format!("{}.1", own.file_name().unwrap().to_string_lossy());
    assert!(names.contains(&rotated), "the big log was rotated: {names:?}");
    let log = std::fs::read_to_string(&own).unwrap();
    assert!(log.contains("mounted") || log.contains("INFO"), "{log}");
    assert!(!log.contains('\u{1b}'), "colour codes in the log file: {log}");

    // -f with stderr to a file: no colour codes either.
    let mp2 = tmp.path().join("mnt2");
    std::fs::create_dir(&mp2).unwrap();
    let err_file = tmp.path().join("stderr.txt");
    let mut child = bin()
        .args(["mount", "-f", &sample(), mp2.to_str().unwrap()])
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !nzfs::daemon::is_mount_point(&mp2) {
        assert!(start.elapsed() < Duration::from_secs(20), "no foreground mount");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = nzfs(&["unmount", mp2.to_str().unwrap()]);
    let _ = child.wait();
    let text = std::fs::read_to_string(&err_file).unwrap();
    assert!(!text.is_empty() && !text.contains('\u{1b}'), "{text:?}");
}

#[test]
fn si_sizes_are_si_and_the_version_says_commit_and_features() {
    let m = common::mount::Mount::new("sample.zarr", &["--cache-size", "1GB"]);
    let status = nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
    let doc = nzfs::json::parse(&status.stdout).unwrap();
    let budget = doc
        .get("cache")
        .and_then(|c| c.get("budget_bytes"))
        .and_then(|v| v.as_u64());
    assert_eq!(budget, Some(1_000_000_000));
    let out = nzfs(&["mount", "--cache-size", "1XB", &sample(), "/nonexistent"]);
    assert!(
        stderr(&out).contains("GB") && stderr(&out).contains("GiB"),
        "{}",
        stderr(&out)
    );
    let v = String::from_utf8_lossy(&nzfs(&["--version"]).stdout).into_owned();
    assert!(v.contains("commit ") && v.contains("features: "), "{v}");
    for (feature, on) in [
        ("remote", cfg!(feature = "remote")),
        ("icechunk", cfg!(feature = "icechunk")),
        ("zfp", cfg!(feature = "zfp")),
    ] {
        assert_eq!(v.contains(feature), on, "{feature}: {v}");
    }
}

/// A store that does not claim NZ-1.0 is plain Zarr, not a broken store:
/// its mount logs no warning about the convention, and `nzfs check` says
/// in a line what NZ-1.0 is and that the store does not declare it. A
/// store that declares it and breaks a rule still gets the warning.
#[test]
fn a_store_that_does_not_declare_nz_gets_no_warning() {
    let m = common::mount::Mount::new("nz_undeclared.zarr", &[]);
    let log = m.log();
    assert!(
        !log.lines().any(|l| l.contains("WARN") && l.contains("NZ-1.0")),
        "{log}"
    );
    drop(m);
    let out = nzfs(&["check", common::data_dir().join("nz_undeclared.zarr").to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("does not declare NZ-1.0 (the NetCDF-Zarr convention"),
        "{said}"
    );
    // Scripts tell the two apart from the JSON too.
    for (store, declared) in [("nz_undeclared.zarr", false), ("nz_shared_dimension.zarr", true)] {
        let out = nzfs(&["check", "--json", common::data_dir().join(store).to_str().unwrap()]);
        let doc = nzfs::json::parse(&out.stdout).unwrap();
        assert_eq!(doc.get("declared"), Some(&nzfs::json::Value::Bool(declared)), "{store}");
    }
    let m = common::mount::Mount::new("nz_shared_dimension.zarr", &[]);
    assert!(
        m.log()
            .lines()
            .any(|l| l.contains("WARN") && l.contains("declares NZ-1.0 but")),
        "{}",
        m.log()
    );
}

/// A store whose root is one array (what `zarr.create_array("big.zarr",
/// ...)` writes) has a `.nc` too, named after the store, holding that
/// array: xarray on it found no file. Its values are `data.bin`'s, big-endian.
#[test]
fn a_root_array_store_has_a_netcdf_file() {
    let m = common::mount::Mount::new("root_array.zarr", &[]);
    let names: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().any(|n| n == "root_array.nc"), "{names:?}");
    let out = Command::new("ncdump")
        .arg("-h")
        .arg(m.mp.join("root_array.nc"))
        .output()
        .unwrap();
    let header = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && header.contains("short root_array(y, x) ;"),
        "{header}"
    );
    let nc = std::fs::read(m.mp.join("root_array.nc")).unwrap();
    let data = std::fs::read(m.mp.join("data.bin")).unwrap();
    let begin = 1 << 20;
    let big_endian: Vec<u8> = data
        .chunks_exact(2)
        .flat_map(|v| i16::from_ne_bytes([v[0], v[1]]).to_be_bytes())
        .collect();
    assert_eq!(nc[begin..begin + data.len()], big_endian[..]);
}

/// `nzfs status` of a path that is no nzfs mount says which of the two
/// it is: no mount point at all, or another filesystem's mount point.
#[test]
fn status_of_what_is_not_an_nzfs_mount_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let out = nzfs(&["status", tmp.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is not a mount point"), "{}", stderr(&out));
    // /proc is a mount point on every Linux this runs on, and not nzfs.
    let out = nzfs(&["status", "/proc"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/proc is not an nzfs mount"), "{err}");
}

/// A directory inside a live mount is not "not a mount point": `nzfs
/// status` and `nzfs unmount` name the mount it is in; and `nzfs unmount`
/// of a path that does not exist says so rather than "is not mounted".
#[test]
fn a_path_inside_a_mount_or_nowhere_is_named_as_such() {
    let m = common::mount::Mount::new("sample.zarr", &[]);
    let inside = m.mp.join("t2m");
    let mp = m.mp.display().to_string();
    for cmd in ["status", "unmount"] {
        let out = nzfs(&[cmd, inside.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{cmd}: {err}");
        assert!(err.contains(&format!("inside the nzfs mount {mp}")), "{cmd}: {err}");
    }
    assert!(nzfs::daemon::is_mount_point(&m.mp), "still mounted");
    let out = nzfs(&["unmount", "/no/such/path"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("/no/such/path does not exist"),
        "{err}"
    );
}

/// `nzfs status` with no mount point lists the live nzfs mounts, each with
/// its store, as text and as JSON.
#[test]
fn status_without_a_mount_point_lists_the_live_mounts() {
    let m = common::mount::Mount::new("sample.zarr", &[]);
    let out = nzfs(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with(m.mp.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("sample.zarr"), "{line}");
    let out = nzfs(&["status", "--json"]);
    let doc = nzfs::json::parse(&out.stdout).unwrap();
    let listed = doc.as_array().unwrap().iter().any(|e| {
        e.get("mountpoint").and_then(|v| v.as_str()) == m.mp.to_str()
            && e.get("store")
                .and_then(|v| v.as_str())
                .is_some_and(|s| s.ends_with("sample.zarr"))
    });
    assert!(listed, "{}", String::from_utf8_lossy(&out.stdout));
}

/// A netCDF file given as the store is named as one (no mount needed); a
/// missing store is named by its absolute path without "os error 2"; `nzfs
/// cdl STORE NOSUCH` lists what is there; a size in bits is refused.
#[test]
fn first_mistakes_get_messages_that_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let nc = common::data_dir().join("nczarr_src.nc");
    let out = nzfs(&["mount", nc.to_str().unwrap(), mp.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(err.contains("is a netCDF file") && err.contains("ncdump -h"), "{err}");
    let out = nzfs(&["mount", "nosuch.zarr", mp.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let abs = std::env::current_dir().unwrap().join("nosuch.zarr");
    assert!(err.contains(&format!("{} does not exist", abs.display())), "{err}");
    assert!(!err.contains("os error"), "{err}");
    let out = nzfs(&["cdl", &sample(), "nosuch"]);
    let err = stderr(&out);
    assert!(err.contains("it holds: ") && err.contains("t2m"), "{err}");
    let out = nzfs(&["mount", "--cache-size", "1Gb", &sample(), mp.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bits"), "{err}");
}
