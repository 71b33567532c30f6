//! Build script (Cargo.toml: `build = "src/build.rs"`): records what a bug
//! report needs in `nzfs --version`: the git commit the binary
//! was built from (`unknown` outside a checkout, or from `NZFS_COMMIT`) and
//! the enabled cargo features.

use std::process::Command;

fn main() {
    #[cfg(feature = "csi")]
    csi();
    let commit = std::env::var("NZFS_COMMIT").ok().or_else(|| {
        let out = Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()?;
        let hash = String::from_utf8(out.stdout).ok()?.trim().to_string();
        if !out.status.success() || hash.is_empty() {
            return None;
        }
        let dirty = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .output()
            .ok()
            .is_some_and(|o| !o.stdout.is_empty());
        Some(if dirty { format!("{hash}-modified") } else { hash })
    });
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .filter(|f| f != "default")
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    println!(
        "cargo:rustc-env=NZFS_BUILD_INFO=commit {}; features: {features}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!("cargo:rerun-if-env-changed=NZFS_COMMIT");
    // The commit moves with HEAD or the branch it names. Not `.git/index`:
    // git rewrites it on a mere `git status` (as this script and maturin
    // run), which rebuilt the crate in a later cargo run for nothing (CI's
    // fuzz stage, 90 s); so `-modified` may lag edits until the next commit.
    let mut watched = vec![".git/HEAD".to_string(), ".git/packed-refs".to_string()];
    if let Some(branch) = std::fs::read_to_string(".git/HEAD")
        .ok()
        .and_then(|h| h.strip_prefix("ref: ").map(|r| r.trim().to_string()))
    {
        watched.push(format!(".git/{branch}"));
    }
    for f in watched {
        if std::path::Path::new(&f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    println!("cargo:rerun-if-changed=src/build.rs");
}

/// The CSI gRPC services from `deploy/kubernetes/csi.proto` (spec 1.x, as
/// copied from the CSI repository: the interface the node plugin serves,
/// kept with its deployment rather than in `src/`), compiled by protox: no
/// protoc needed.
#[cfg(feature = "csi")]
fn csi() {
    println!("cargo:rerun-if-changed=deploy/kubernetes/csi.proto");
    let fds = protox::compile(["csi.proto"], ["deploy/kubernetes"]).expect("compile deploy/kubernetes/csi.proto");
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)
        .expect("generate the CSI services");
}
