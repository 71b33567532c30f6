//! Icechunk repositories the icechunk crate writes itself (its newest
//! format), through real mounts: every ref and snapshot, virtual chunks in
//! local files, an absent shard, and a mount of a branch following its
//! commits. (`tests/icechunk.rs` reads what icechunk-python wrote.)
#![cfg(feature = "icechunk")]

mod common;

use std::path::Path;

use common::mount::{Mount, nzfs, read_paths};
use common::repos::{Expected, REPO, assert_eio, block_on, expected, same_arrays, snapshot_named_in};

/// One array's `zarr.json`: int32, `shape` elements in chunks of 2, stored
/// raw little-endian (so the test knows every chunk's bytes).
fn int32_array(shape: usize) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}], "data_type": "int32",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
        "dimension_names": ["n"], "attributes": {{}}}}"#
    )
}

/// A repository created at `dir` by the crate, in its newest format.
async fn create(dir: &Path) -> icechunk::Repository {
    let storage = icechunk::new_local_filesystem_storage(dir).await.unwrap();
    icechunk::Repository::create(storage).execute().await.unwrap()
}

/// A writable session on `branch`, as a store whose root group is set.
async fn writable(repo: &icechunk::Repository, branch: &str) -> icechunk::Store {
    let session = repo.writable_session(branch).await.unwrap();
    let session = std::sync::Arc::new(tokio::sync::RwLock::new(session));
    let store = icechunk::Store::from_session(session).await;
    let group = br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;
    store.set("zarr.json", bytes::Bytes::from_static(group)).await.unwrap();
    store
}

/// Commit what `store` was given.
async fn commit(store: icechunk::Store, message: &str) -> icechunk::format::SnapshotId {
    let session = store.session();
    let mut session = session.write().await;
    session.commit(message).execute().await.unwrap()
}

/// int32 values as the little-endian bytes `data.bin` shows.
fn le(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Write, with the crate, a repository in its newest format: three commits
/// on main (each sets `a` and adds an array), the tag v1 at the second, the
/// branch dev from it with a commit of its own. Returns each ref's
/// directory under `--all-versions` with its arrays' expected `data.bin`.
fn write_with_the_crate(dir: &Path) -> Vec<Expected> {
    block_on(async {
        let repo = create(dir).await;
        assert_eq!(repo.spec_version() as u8, 2, "the crate's newest format");
        // Commit arrays (name, values) on `branch`, stored raw in chunks of 2.
        let put = async |branch: &str, arrays: &[(&str, &[i32])], message: &str| {
            let store = writable(&repo, branch).await;
            for (name, values) in arrays {
                let meta = int32_array(values.len());
                store
                    .set(&format!("{name}/zarr.json"), meta.into_bytes().into())
                    .await
                    .unwrap();
                for (i, pair) in values.chunks(2).enumerate() {
                    store.set(&format!("{name}/c/{i}"), le(pair).into()).await.unwrap();
                }
            }
            commit(store, message).await
        };
        put("main", &[("a", &[1, 2, 3, 4])], "first").await;
        let second = put("main", &[("a", &[10, 20, 30, 40]), ("b", &[5, 6])], "second").await;
        repo.create_tag("v1", &second).await.unwrap();
        repo.create_branch("dev", &second).await.unwrap();
        put("main", &[("a", &[-1, -2, -3, -4]), ("c", &[7, 8, 9, 10])], "third").await;
        put("dev", &[("b", &[50, 60])], "dev").await;
    });
    let version = |name: &str, arrays: &[(&str, &[i32])]| Expected {
        name: name.into(),
        arrays: arrays.iter().map(|(n, v)| (n.to_string(), le(v))).collect(),
    };
    vec![
        version(
            "branches/main",
            &[("a", &[-1, -2, -3, -4]), ("b", &[5, 6]), ("c", &[7, 8, 9, 10])],
        ),
        version("tags/v1", &[("a", &[10, 20, 30, 40]), ("b", &[5, 6])]),
        version("branches/dev", &[("a", &[10, 20, 30, 40]), ("b", &[50, 60])]),
    ]
}

read_paths!(a_repository_the_crate_writes_in_format_2_reads_at_every_ref);
fn a_repository_the_crate_writes_in_format_2_reads_at_every_ref() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("fresh");
    let want = write_with_the_crate(&repo);
    let m = Mount::at(&repo, &["--all-versions"]);
    for v in &want {
        same_arrays(&m.mp.join(&v.name), v);
    }
    assert!(m.log().contains("format=2"), "{}", m.log());
    // Four commits and the initial one.
    let snapshots = std::fs::read_dir(m.mp.join("snapshots"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
        .count();
    assert_eq!(snapshots, 5);
}

read_paths!(virtual_chunks_in_local_files_are_read_and_a_rewritten_file_gives_eio);
fn virtual_chunks_in_local_files_are_read_and_a_rewritten_file_gives_eio() {
    use icechunk::format::manifest::{Checksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let raw = src.join("raw.bin");
    let values = le(&[100, 200, 300, 400]);
    std::fs::write(&raw, &values).unwrap();
    // The reference records the file's modification time in whole seconds
    // (HTTP's precision); a local file's is finer, so round it up.
    let mtime = std::fs::metadata(&raw).unwrap().modified().unwrap();
    let written = mtime.duration_since(UNIX_EPOCH).unwrap().as_secs_f64().ceil() as u32;
    let repo = dir.path().join("repo");
    block_on(async {
        let store = writable(&create(&repo).await, "main").await;
        store
            .set("v/zarr.json", int32_array(4).into_bytes().into())
            .await
            .unwrap();
        for i in 0..2u64 {
            let reference = VirtualChunkRef {
                location: VirtualChunkLocation::from_url(&format!("file://{}", raw.display())).unwrap(),
                offset: i * 8,
                length: 8,
                checksum: Some(Checksum::LastModified(SecondsSinceEpoch(written))),
            };
            store
                .set_virtual_ref(&format!("v/c/{i}"), reference, false)
                .await
                .unwrap();
        }
        commit(store, "virtual into raw.bin").await;
    });
    let allow = format!("virtual_chunks=file://{}/", src.display());
    let m = Mount::at(&repo, &["--store-option", &allow]);
    let read = std::fs::read(m.mp.join("v/data.bin"));
    assert_eq!(read.unwrap_or_else(|e| panic!("{e}: {}", m.log())), values);
    drop(m);
    // The file is rewritten after the references were recorded: a fresh
    // mount refuses its chunks rather than show the new bytes.
    std::fs::write(&raw, [0u8; 16]).unwrap();
    let file = std::fs::File::options().write(true).open(&raw).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(120)).unwrap();
    let m = Mount::at(&repo, &["--store-option", &allow]);
    assert_eio(&m.mp.join("v/data.bin"));
    let log = m.log();
    assert!(log.contains("v/c/") && log.contains("has changed (file://"), "{log}");
}

read_paths!(an_absent_shard_reads_as_the_fill);
/// A sharded array whose second shard was never written: the crate gives
/// an absent chunk the length 0, and a part of it (a shard's index, read
/// first) must be the fill, not a read past its end.
fn an_absent_shard_reads_as_the_fill() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = dir.path().join("repo");
    block_on(async {
        let repo = create(&repo_dir).await;
        let store = writable(&repo, "main").await;
        let meta = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 9,
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
                "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}}],
            "attributes": {}}"#;
        store.set("s/zarr.json", bytes::Bytes::from(meta)).await.unwrap();
        // Shard 0: inner chunks [1] and [2], then their (offset, length).
        let mut shard = vec![1u8, 2];
        for (offset, len) in [(0u64, 1u64), (1, 1)] {
            shard.extend(offset.to_le_bytes());
            shard.extend(len.to_le_bytes());
        }
        store.set("s/c/0", bytes::Bytes::from(shard)).await.unwrap();
        commit(store, "one shard of two").await;
    });
    let m = Mount::at(&repo_dir, &[]);
    assert_eq!(std::fs::read(m.mp.join("s/data.bin")).unwrap(), [1, 2, 9, 9]);
    assert_eq!(std::fs::read(m.mp.join("s/1.bin")).unwrap(), [9, 9]);
}

read_paths!(a_mount_of_a_branch_follows_its_commits);
/// A mount of a branch follows its tip: a commit (here, the branch's ref
/// moved from the second snapshot to the third, as a commit moves it)
/// shows in the live mount within the interval, with the new snapshot's
/// arrays, and `nzfs status` names the new snapshot. Old code: the second
/// snapshot for ever. A reader that opened a file before the commit reads
/// the snapshot it opened; old code: the new commit's values.
fn a_mount_of_a_branch_follows_its_commits() {
    let (refs, _) = expected();
    let by_dir = |d: &str| refs.iter().find(|v| v.name == d).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("history");
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    let main_ref = repo.join("refs/branch.main/ref.json");
    let third = std::fs::read(&main_ref).unwrap();
    std::fs::copy(repo.join("refs/tag.v1/ref.json"), &main_ref).unwrap();
    let m = Mount::at(&repo, &["--metadata-ttl", "1"]);
    same_arrays(&m.mp, by_dir("tags/v1"));
    assert!(!m.mp.join("humidity").exists());
    // A reader holding `temp/data.bin` open across the commit keeps its
    // snapshot (O_DIRECT: every read reaches the daemon).
    let v1_temp = by_dir("tags/v1")
        .arrays
        .iter()
        .find(|(p, _)| p == "temp")
        .unwrap()
        .1
        .clone();
    let held = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(m.mp.join("temp/data.bin"))
            .unwrap()
    };
    let moved = repo.join("refs/branch.main/ref.json.new");
    std::fs::write(&moved, &third).unwrap();
    std::fs::rename(&moved, &main_ref).unwrap();
    let start = std::time::Instant::now();
    while !m.mp.join("humidity").exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the commit never showed"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    same_arrays(&m.mp, by_dir("branches/main"));
    let mut buf = vec![0u8; 4096];
    let n = std::os::unix::fs::FileExt::read_at(&held, &mut buf, 0).unwrap();
    assert!(
        buf[..n] == v1_temp[..],
        "the held temp/data.bin reads its snapshot's values (old code: the new commit's)"
    );
    let id = snapshot_named_in(&m.mp.join("header.cdl"));
    let status = nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains(&format!("@{id}")),
        "status names the new snapshot {id}"
    );
    assert!(m.log().contains("the branch moved"), "{}", m.log());
}
