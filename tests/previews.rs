//! Issue #37 through real mounts: `preview.png` and `index.html` are sized
//! from metadata (listing and `stat` decode nothing, counted by `nzfs
//! status`), their `stat` size is their content's length, a preview of a
//! sharded array decodes only the inner chunks its sample points fall in,
//! and `--no-previews` shows neither. (Their pixels are checked against
//! zarr-python's values by scripts/check_previews.py, and the page in
//! headless Chromium.)

mod common;

use std::path::Path;

use common::mount::Mount;

fn status(mp: &Path) -> nzfs::zarr::json::Value {
    let out = common::mount::nzfs(&["status", "--json", mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    nzfs::zarr::json::parse(&out.stdout).unwrap()
}

fn count(v: &nzfs::zarr::json::Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| v.get(k).unwrap_or_else(|| panic!("no {k} in {v}")))
        .as_u64()
        .unwrap()
}

#[test]
fn previews_are_sized_from_metadata_and_read_as_stated() {
    for store in ["sample.zarr", "previews.zarr", "sharding.zarr", "dtypes.zarr"] {
        let m = Mount::new(store, &[]);
        let mut files = vec![m.mp.join("index.html")];
        for f in common::servers::files(&m.mp) {
            if f.file_name().is_some_and(|n| n == "preview.png") {
                files.push(f);
            }
        }
        let sizes: Vec<u64> = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).collect();
        let s = status(&m.mp);
        assert_eq!(count(&s, &["chunks_decoded"]), 0, "{store}: stat decoded: {s}");
        assert_eq!(count(&s, &["previews", "rendered"]), 0, "{store}");
        for (f, size) in files.iter().zip(&sizes) {
            let bytes = std::fs::read(f).unwrap();
            assert_eq!(bytes.len() as u64, *size, "{}", f.display());
            if f.ends_with("preview.png") {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            }
        }
        let pngs = files.len() as u64 - 1;
        assert!(store != "previews.zarr" || pngs == 4, "{store}: {pngs} previews");
        assert_eq!(count(&status(&m.mp), &["previews", "rendered"]), pngs, "{store}");
    }
}

/// `strided` (4096 x 64 uint8, one shard of inner chunks 4 x 64) is
/// sampled every 8th row: its preview decodes every other inner chunk.
#[test]
fn a_sharded_preview_decodes_only_the_sampled_inner_chunks() {
    let m = Mount::new("previews.zarr", &[]);
    let before = status(&m.mp);
    std::fs::read(m.mp.join("strided/preview.png")).unwrap();
    let after = status(&m.mp);
    let decoded = count(&after, &["chunks_decoded"]) - count(&before, &["chunks_decoded"]);
    // Independently: the inner chunks (rows / 4) that sampled rows (every
    // 8th: the long side 4096 over at most 512 pixels) fall in, one
    // column of inner chunks; plus the shard's index and the preview, each
    // held in the cache.
    let stride = 4096usize.div_ceil(512);
    let mut rows: Vec<usize> = (0..4096).step_by(stride).map(|r| r / 4).collect();
    rows.dedup();
    assert_eq!(rows.len(), 512);
    assert_eq!(decoded, rows.len() as u64 + 2, "{after}");
    // The whole array would be 1024 inner chunks.
    let data = std::fs::read(m.mp.join("strided/data.bin")).unwrap();
    let all = count(&status(&m.mp), &["chunks_decoded"]) - count(&after, &["chunks_decoded"]);
    assert_eq!(data.len(), 4096 * 64);
    assert_eq!(all, 1024 - 512, "the rest of the inner chunks");
}

#[test]
fn no_previews_hides_them() {
    let m = Mount::new("previews.zarr", &["--no-previews"]);
    assert!(!m.mp.join("index.html").exists());
    assert!(!m.mp.join("field/preview.png").exists());
    let names: Vec<String> = std::fs::read_dir(m.mp.join("field"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".png")), "{names:?}");
    assert_eq!(
        status(&m.mp).get("previews").unwrap().get("shown"),
        Some(&nzfs::zarr::json::Value::Bool(false))
    );
    // The same as a mount(8)/fstab option.
    let o = Mount::new("previews.zarr", &["-o", "no_previews"]);
    assert!(!o.mp.join("index.html").exists() && !o.mp.join("field/preview.png").exists());
    // A 1-D array has none, with previews on.
    let m = Mount::new("previews.zarr", &[]);
    assert!(!m.mp.join("lat/preview.png").exists());
    assert!(m.mp.join("field/preview.png").exists());
}
