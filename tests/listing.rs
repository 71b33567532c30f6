//! Listings through a real mount: `ls -la` gets each entry's attributes
//! with the listing (READDIRPLUS), not one `lookup` request per name, and
//! a plain listing decodes nothing (the text views, whose sizes need a
//! decode, are listed without attributes and sized when looked at).

mod common;

use std::process::Command;

use common::mount::Mount;
use nzfs::json::Value;

fn count(doc: &Value, a: &str, b: &str) -> u64 {
    doc.get(a)
        .and_then(|v| v.get(b))
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {a}.{b} in {doc}"))
}

/// `ls -l` asks every entry for three extended attributes
/// (`security.selinux` and both POSIX ACLs). The daemon has none and says
/// so once (`ENOSYS`), so the kernel answers all of them itself: a user
/// attribute or `security.selinux` is `EOPNOTSUPP`, from the kernel, not
/// `ENODATA` from a round trip to the daemon per entry and name. The status
/// document, which was the root's attribute, is the root's ioctl.
#[test]
fn extended_attributes_cost_no_request_per_entry() {
    let m = Mount::new("sample.zarr", &[]);
    let listed = Command::new("ls").arg("-laR").arg(&m.mp).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    for path in [
        m.mp.clone(),
        m.mp.join("t2m"),
        m.mp.join("t2m/data.bin"),
        m.mp.join("t2m/header.cdl"),
    ] {
        for name in ["security.selinux", "user.nzfs.status", "user.anything"] {
            let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            let c_name = std::ffi::CString::new(name).unwrap();
            let mut buf = [0u8; 64];
            // SAFETY: NUL-terminated strings, a buffer of its length.
            let n = unsafe { libc::getxattr(c_path.as_ptr(), c_name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
            let errno = std::io::Error::last_os_error().raw_os_error();
            assert_eq!(
                (n, errno),
                (-1, Some(libc::EOPNOTSUPP)),
                "{name} of {}: the daemon was asked",
                path.display()
            );
        }
    }
    // The status still answers, through the ioctl.
    assert!(count(&m.status(), "cache", "budget_bytes") > 0);
}

#[test]
fn ls_la_gets_attributes_with_the_names_and_decodes_nothing() {
    let m = Mount::new("strings_v3.zarr", &[]);
    // A plain listing (names only) decodes nothing, though every directory
    // is listed with attributes.
    let plain = Command::new("ls")
        .arg("-R")
        .arg("--color=never")
        .arg(&m.mp)
        .output()
        .unwrap();
    assert!(plain.status.success());
    let before = m.status();
    assert_eq!(count(&before, "cache", "decodes"), 0, "ls -R decoded: {before}");
    assert!(count(&before, "names", "listed_with_attributes") > 0, "{before}");
    let listed = Command::new("ls").arg("-laR").arg(&m.mp).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let entries = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| l.starts_with('-') || l.starts_with('d'))
        .count() as u64;
    let after = m.status();
    assert_eq!(
        after.get("names").and_then(|n| n.get("readdirplus")),
        Some(&Value::Bool(true))
    );
    let lookups = count(&after, "names", "lookups") - count(&before, "names", "lookups");
    let with = count(&after, "names", "listed_with_attributes");
    // Every entry came with its attributes but the text views (data.txt
    // and the string arrays' chunk .txt files), looked up one by one.
    assert!(with * 2 > entries, "{with} of {entries} entries listed with attributes");
    assert!(lookups * 2 < entries, "{lookups} lookups for {entries} entries");
    // A text view listed without attributes still has its size when
    // looked at, and it is the size of what it reads.
    let text = m.mp.join("names/data.txt");
    let names: Vec<_> = std::fs::read_dir(m.mp.join("names"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(names.iter().any(|n| n == "data.txt"), "{names:?}");
    let len = std::fs::metadata(&text).unwrap().len();
    assert!(len > 0);
    assert_eq!(std::fs::read(&text).unwrap().len() as u64, len);
}
