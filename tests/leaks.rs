//! What another user learns through an `allow_other` mount beyond what the
//! store's own modes allow: an OME-TIFF whose levels lie below a directory
//! that user cannot search, a level's files that show its image group's
//! metadata, and the status document's messages, which name store keys.
//! Each test makes a second real user and reads as that user.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::users::{Users, cat_output, mount_for_others};

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn denied(out: &std::process::Output) -> bool {
    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Permission denied")
}

/// An image whose `datasets` paths pass through `priv/` (mode 0700): a
/// user denied `priv/s0/data.bin` is denied the OME-TIFF that holds its
/// pixels, which root still reads.
#[test]
fn an_ome_tiff_meets_the_directories_between_its_image_and_its_levels() {
    let users = Users::create();
    let tmp = tempfile::tempdir().unwrap();
    set_mode(tmp.path(), 0o755);
    let store = tmp.path().join("img.zarr");
    common::copy_dir(&common::data_dir().join("ome/ngff05.zarr"), &store);
    let private = store.join("priv");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    for level in ["s0", "s1", "s2", "s3", "s4"] {
        std::fs::rename(store.join(level), private.join(level)).unwrap();
    }
    let meta = std::fs::read_to_string(store.join("zarr.json")).unwrap();
    let moved = meta.replace(r#""path": "s"#, r#""path": "priv/s"#);
    assert_ne!(meta, moved);
    std::fs::write(store.join("zarr.json"), moved).unwrap();
    set_mode(&private, 0o700);
    let m = common::mount::Mount::at(&store, &["-o", "allow_other"]);
    set_mode(m.dir.path(), 0o755);
    let tif = m.mp.join("img.ome.tif");
    assert!(std::fs::read(&tif).unwrap().len() > 1000, "root reads the OME-TIFF");
    assert!(denied(&cat_output(&users.other, &m.mp.join("priv/s0/data.bin"))));
    let out = cat_output(&users.other, &tif);
    assert!(
        denied(&out),
        "the level's pixels through the OME-TIFF: {:?}, {} bytes",
        out.status,
        out.stdout.len()
    );
}

/// With the image group's `zarr.json` root's alone, another user is
/// denied the group's header.cdl and also a level's, which shows the
/// group's axis names, scales and units, and the level's preview, which
/// shows its `omero` label.
#[test]
fn a_levels_files_meet_their_image_groups_metadata() {
    let users = Users::create();
    // (ngff04 is Zarr v2: the image's multiscales are in its .zattrs.)
    let (_tmp, m) = mount_for_others("ome/ngff04.zarr", Some(".zattrs"));
    assert!(denied(&cat_output(&users.other, &m.mp.join("header.cdl"))));
    let level = m.mp.join("s0/header.cdl");
    let header = std::fs::read_to_string(&level).unwrap();
    assert!(
        header.contains("ome_scale_"),
        "the level shows its image's scales:\n{header}"
    );
    let out = cat_output(&users.other, &level);
    assert!(
        denied(&out),
        "the image group's scales through a level's header: {out:?}"
    );
    let preview = m.mp.join("s0/preview.png");
    if preview.exists() {
        assert!(denied(&cat_output(&users.other, &preview)));
    }
}

/// Under `allow_other` anyone may ask for the status document, but the
/// recent errors' messages, which name store keys, are for root and the
/// mount's owner: another user gets their times and kinds.
#[test]
fn the_status_document_names_keys_to_root_and_the_owner_only() {
    let users = Users::create();
    let (tmp, m) = mount_for_others("sample.zarr", None);
    // A chunk that cannot be decoded, read once: an error naming its key.
    std::fs::write(tmp.path().join("sample.zarr/t2m/c/0/0/0"), b"not zstd at all").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(std::fs::read(m.mp.join("t2m/0.0.0.bin")).is_err());
    let status = |user: Option<&str>| {
        let mut cmd = match user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--", env!("CARGO_BIN_EXE_nzfs")]);
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_nzfs")),
        };
        let out = cmd.args(["status", "--json"]).arg(&m.mp).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let root = status(None);
    assert!(root.contains("t2m/c/0/0/0"), "root sees the key: {root}");
    let other = status(Some(&users.other));
    assert!(!other.contains("t2m/c/"), "another user sees a store key: {other}");
    assert!(other.contains(r#""kind":"#) && other.contains("left out"), "{other}");
}

/// A combined file's modes follow its objects: after a chunk another user
/// read through data.bin is replaced by a file root's alone (0600), that
/// user is denied data.bin at the next open, as the chunk file itself
/// (the meet was made once per mount, and data.bin kept serving the
/// chunk's new bytes to everyone).
#[test]
fn a_combined_files_modes_follow_a_changed_chunk() {
    let users = Users::create();
    let (tmp, m) = mount_for_others("sample.zarr", None);
    let data = m.mp.join("t2m/data.bin");
    let first = cat_output(&users.other, &data);
    assert!(first.status.success(), "{first:?}");
    let chunk = tmp.path().join("sample.zarr/t2m/c/0/0/0");
    let fresh = tmp.path().join("sample.zarr/t2m/c/0/0/.new");
    std::fs::copy(&chunk, &fresh).unwrap();
    set_mode(&fresh, 0o600);
    std::fs::rename(&fresh, &chunk).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(denied(&cat_output(&users.other, &m.mp.join("t2m/0.0.0.bin"))));
    let out = cat_output(&users.other, &data);
    assert!(
        denied(&out),
        "data.bin after its chunk became root's alone: {:?}, {} bytes",
        out.status,
        out.stdout.len()
    );
}

/// A chunk written after the mount (it was absent), with mode 0600, which
/// no decode has read: another user is denied `data.bin` at the next open,
/// as the chunk file itself. The meet of `data.bin` was made when root
/// stat'ed it, and only objects a decode had read were watched, so the new
/// chunk's bytes reached every user through `data.bin`.
#[test]
fn a_chunk_written_later_narrows_the_combined_files_unread() {
    let users = Users::create();
    let (tmp, m) = common::users::mount_for_others_after("sample.zarr", |store| {
        std::fs::rename(store.join("t2m/c/1/1/1"), store.with_file_name("held")).unwrap();
    });
    let data = m.mp.join("t2m/data.bin");
    assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o444);
    let chunk = tmp.path().join("sample.zarr/t2m/c/1/1/1");
    let fresh = tmp.path().join("sample.zarr/t2m/c/1/1/.new");
    std::fs::copy(tmp.path().join("held"), &fresh).unwrap();
    set_mode(&fresh, 0o600);
    std::fs::rename(&fresh, &chunk).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(denied(&cat_output(&users.other, &m.mp.join("t2m/1.1.1.bin"))));
    let out = cat_output(&users.other, &data);
    assert!(
        denied(&out),
        "data.bin after an unread chunk was written root's alone: {:?}, {} bytes",
        out.status,
        out.stdout.len()
    );
    assert!(std::fs::read(&data).is_ok(), "root still reads it");
}

/// A chunk object that no decode has read, made root's alone by `chmod`
/// after the meet of `data.bin` was made: another user is denied
/// `data.bin` at the next open, as the chunk file itself. Only names added
/// to a directory were watched, and a `chmod` adds none, so every user
/// still read the chunk's bytes through `data.bin`.
#[test]
fn a_chunk_made_private_later_narrows_the_combined_files_unread() {
    let users = Users::create();
    let (tmp, m) = mount_for_others("sample.zarr", None);
    let data = m.mp.join("t2m/data.bin");
    assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o444);
    set_mode(&tmp.path().join("sample.zarr/t2m/c/1/1/1"), 0o600);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(denied(&cat_output(&users.other, &m.mp.join("t2m/1.1.1.bin"))));
    // Each stat looks at a batch of what the meet walked, in turn: a few
    // are enough for this array.
    for _ in 0..3 {
        let _ = std::fs::metadata(&data);
    }
    let out = cat_output(&users.other, &data);
    assert!(
        denied(&out),
        "data.bin after an unread chunk was made root's alone: {:?}, {} bytes",
        out.status,
        out.stdout.len()
    );
    assert!(std::fs::read(&data).is_ok(), "root still reads it");
}

/// `index.html` gives a time coordinate's first and last dates, so it
/// meets that coordinate's objects: with the time chunk root's alone,
/// another user is denied the page (and the chunk), root reads it.
#[test]
fn the_index_meets_the_time_coordinates_it_dates() {
    let users = Users::create();
    let (_tmp, m) = mount_for_others("sample.zarr", Some("time/c/0"));
    let index = m.mp.join("index.html");
    let page = std::fs::read_to_string(&index).unwrap();
    assert!(page.contains("from 2000-01-01 to "), "root reads the dates: {page}");
    assert!(denied(&cat_output(&users.other, &m.mp.join("time/0.bin"))));
    let out = cat_output(&users.other, &index);
    assert!(
        denied(&out),
        "index.html with its dates' chunk root's alone: {:?}",
        out.status
    );
    // Unrestricted, the other user reads the same page.
    let (_tmp, open) = mount_for_others("sample.zarr", None);
    let page = common::users::cat_as(&users.other, &open.mp.join("index.html")).unwrap();
    assert!(String::from_utf8_lossy(&page).contains("from 2000-01-01 to "));
}
