//! The real netCDF-C tools (`ncdump`, `ncgen`, Debian's `netcdf-bin`) as
//! the tests run them: a tool that fails fails the test, with its stderr.

use std::path::Path;
use std::process::Command;

/// `ncdump ARGS FILE`'s output.
pub fn ncdump(args: &[&str], file: &Path) -> String {
    let out = Command::new("ncdump")
        .args(args)
        .arg(file)
        .output()
        .expect("ncdump (apt-get install netcdf-bin)");
    assert!(
        out.status.success(),
        "ncdump {args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ncgen -k nc4 -o NC CDL`: the CDL file `cdl` made into netCDF-4 file
/// `nc`; a refusal shows ncgen's stderr and the CDL.
pub fn ncgen(cdl: &Path, nc: &Path) {
    let out = Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(nc)
        .arg(cdl)
        .output()
        .expect("ncgen (apt-get install netcdf-bin)");
    assert!(
        out.status.success(),
        "ncgen rejected {}:\n{}\n{}",
        cdl.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(cdl).unwrap_or_default()
    );
}

/// Run `cmd` (a netCDF tool, CDO, NCO), which must exit 0: its stdout; a
/// failure shows its stderr.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/setup.sh --test installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ncdump FILE`'s data section, its whitespace folded to one space.
pub fn data_section(nc: &Path) -> String {
    ncdump(&[], nc)
        .split("\ndata:\n")
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
