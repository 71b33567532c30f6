//! The real image tools as the tests run them: GDAL's GTiff driver and
//! libtiff's `tiffinfo` (Debian's `gdal-bin` and `libtiff-tools`).

use std::path::Path;
use std::process::Command;

/// The pixel at column `x`, row `y` of the first page of `tif`, as GDAL's
/// GTiff driver reads it (printed as a double, to 15 digits).
pub fn gdal_pixel(tif: &Path, x: usize, y: usize) -> f64 {
    let r = Command::new("gdallocationinfo")
        .args(["-valonly"])
        .arg(tif)
        .args([x.to_string(), y.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("gdallocationinfo: {text:?} {}", String::from_utf8_lossy(&r.stderr)))
}

/// `tiffinfo FILE`: what it prints on stdout, and on stderr.
pub fn tiffinfo(file: &Path) -> (String, String) {
    let out = Command::new("tiffinfo").arg(file).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
