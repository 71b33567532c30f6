//! The Icechunk fixture `tests/data/icechunk/history` as the fixture script
//! recorded it (`tests/data/expected/icechunk.json`), and the checks its
//! mounts share: `tests/icechunk.rs` and `tests/icechunk_crate.rs`.

use std::path::Path;

use nzfs::json::{self, Value};

/// The fixture repository, under `tests/data`.
pub const REPO: &str = "icechunk/history";

/// The options of a local repository opened by a test itself (another
/// writer of a branch): no credentials, no retries.
#[cfg(feature = "icechunk")]
pub fn local_options() -> nzfs::store::object::RemoteOptions {
    nzfs::store::object::RemoteOptions {
        environment: Vec::new(),
        options: Vec::new(),
        anonymous: false,
        connect_timeout: std::time::Duration::from_secs(5),
        request_timeout: std::time::Duration::from_secs(30),
        retries: 0,
    }
}

/// One version's arrays: hierarchy path and expected bytes.
pub struct Expected {
    /// `branches/main`, `tags/v1`, or for a snapshot its commit message.
    pub name: String,
    /// Hierarchy path and expected `data.bin` of each array.
    pub arrays: Vec<(String, Vec<u8>)>,
}

/// The arrays of one version's record: hierarchy path and expected bytes.
pub fn arrays(v: &Value) -> Vec<(String, Vec<u8>)> {
    let Some(Value::Array(items)) = v.get("arrays") else {
        panic!("no arrays")
    };
    items
        .iter()
        .map(|a| {
            let path = a.get("path").unwrap().as_str().unwrap().to_string();
            let bytes = std::fs::read(super::data_dir().join(a.get("expected").unwrap().as_str().unwrap())).unwrap();
            (path, bytes)
        })
        .collect()
}

/// The refs' versions and the snapshots, as the fixture script recorded them.
pub fn expected() -> (Vec<Expected>, Vec<Expected>) {
    let text = std::fs::read(super::data_dir().join("expected/icechunk.json")).unwrap();
    let doc = json::parse(&text).unwrap();
    let Some(Value::Array(repos)) = doc.get("repos") else {
        panic!()
    };
    let repo = &repos[0];
    let list = |key: &str, name: &str| -> Vec<Expected> {
        let Some(Value::Array(vs)) = repo.get(key) else {
            panic!()
        };
        vs.iter()
            .map(|v| Expected {
                name: v.get(name).unwrap().as_str().unwrap().to_string(),
                arrays: arrays(v),
            })
            .collect()
    };
    (list("versions", "dir"), list("snapshots", "message"))
}

/// Every expected array's `data.bin` under `root` equals zarr-python's read,
/// and `root` holds no other array. Returns how many were compared.
pub fn same_arrays(root: &Path, want: &Expected) -> usize {
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    let names: Vec<String> = want.arrays.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(dirs, names, "{}: the arrays at {}", want.name, root.display());
    for (path, bytes) in &want.arrays {
        let got = std::fs::read(root.join(path).join("data.bin")).unwrap();
        assert!(got == *bytes, "{}: {path}/data.bin differs from zarr-python", want.name);
    }
    want.arrays.len()
}

/// The snapshot id a `header.cdl` names in its note (`// icechunk snapshot
/// ID, committed …`).
pub fn snapshot_named_in(header: &Path) -> String {
    let text = std::fs::read_to_string(header).unwrap();
    let note = text.lines().nth(1).unwrap_or_default();
    let id = note
        .strip_prefix("// icechunk snapshot ")
        .and_then(|r| r.split(',').next());
    id.unwrap_or_else(|| panic!("{}: no snapshot note: {text}", header.display()))
        .to_string()
}

/// Reading `path` fails with EIO.
pub fn assert_eio(path: &Path) {
    let err = std::fs::read(path).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{}", path.display());
}

/// Run `f` on a runtime of its own (the icechunk crate is async).
#[cfg(feature = "icechunk")]
pub fn block_on<T>(f: impl Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(f)
}

/// The repository at `dir`, opened by the crate.
#[cfg(feature = "icechunk")]
pub async fn open(dir: &Path) -> icechunk::Repository {
    let storage = icechunk::new_local_filesystem_storage(dir).await.unwrap();
    icechunk::Repository::open(storage).execute().await.unwrap()
}

/// A local repository's branch and tag tips: every object under `refs/`,
/// path and bytes, sorted. Equal before and after: no ref moved.
pub fn refs(repo: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = super::servers::files(&repo.join("refs"))
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

/// A copy of the fixture repository in `dir` (`dir/repo`), for a test that
/// writes to it, and where its writable mount's spool goes (`dir/spool`,
/// not made).
pub fn writable_copy(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = dir.join("repo");
    super::copy_dir(&super::data_dir().join(REPO), &repo);
    (repo, dir.join("spool"))
}
