//! The documents as a reader meets them: the README stays short, and every
//! relative link in the README, `docs/` and the CHANGELOG leads to a file
//! that exists and, where it names a heading, to that heading (GitHub's
//! anchor rule: lower case, punctuation dropped, spaces as hyphens).

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 9, "docs/ holds {docs:?}");
    files.extend(docs);
    files
}

/// GitHub's anchor of a heading line.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> HashSet<String> {
    let mut fenced = false;
    let mut out = HashSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line));
        }
    }
    out
}

/// The targets of the Markdown links `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[test]
fn the_readme_is_short() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 150, "README.md has {lines} lines: topics belong in docs/");
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let mut bad = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (path, heading) = target.split_once('#').unwrap_or((&target, ""));
            let linked = match path {
                "" => file.clone(),
                p => file.parent().unwrap_or(Path::new(".")).join(p),
            };
            if !linked.exists() {
                bad.push(format!("{}: {target}: no such file", file.display()));
                continue;
            }
            if !heading.is_empty() && linked.extension().is_some_and(|e| e == "md") {
                let there = std::fs::read_to_string(&linked).unwrap();
                if !anchors(&there).contains(heading) {
                    bad.push(format!("{}: {target}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// The README's listing of the sample's `t2m/` is what the demo shows: each
/// name is in a real mount of the sample, and the demo lists each array
/// directory whole (its `ls -l | head -n 12` cut `preview.png` off).
#[test]
fn the_readme_listing_is_what_the_demo_shows() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme
        .split("```")
        .find(|b| b.contains("/tmp/nz/t2m:"))
        .expect("the README's listing");
    let names: Vec<&str> = block.split("/tmp/nz/t2m:").nth(1).unwrap().split_whitespace().collect();
    assert!(names.contains(&"preview.png") && names.len() >= 12, "{names:?}");
    let demo = std::fs::read_to_string(root().join("scripts/demo.sh")).unwrap();
    let ls = demo
        .lines()
        .find(|l| l.trim_start().starts_with("ls -l"))
        .expect("the demo's ls");
    assert!(!ls.contains("head"), "the demo cuts its listing: {ls}");
    let m = common::mount::Mount::new("sample.zarr", &[]);
    for name in names {
        assert!(m.mp.join("t2m").join(name).exists(), "{name} is not in the mount");
    }
}

/// No test changes `/dev/fuse` for the whole machine (another process,
/// another test run, sees the change; one run restored another's).
#[test]
fn no_test_changes_dev_fuse() {
    let mut files = Vec::new();
    let mut pending = vec![root().join("tests"), root().join("scripts")];
    while let Some(dir) = pending.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("data") {
                    pending.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs" || x == "py" || x == "sh")
                && p != root().join("tests/docs.rs")
            {
                files.push(p);
            }
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("/dev/fuse")) {
            assert!(
                !line.contains("set_permissions") && !line.contains("chmod(") && !line.contains("chmod 0"),
                "{} changes /dev/fuse: {line}",
                f.display()
            );
        }
    }
}

/// The repository's top level holds what the developers' guide lists and
/// nothing generated (a coverage run once left twenty `default_*.profraw`
/// files there): every tracked top-level name is one of these.
#[test]
fn the_top_level_holds_only_sources_and_documents() {
    const ALLOWED: &[&str] = &[
        ".ci",
        ".github",
        ".gitignore",
        "CHANGELOG.md",
        "Cargo.lock",
        "Cargo.toml",
        "LICENSE-APACHE",
        "LICENSE-MIT",
        "README.md",
        "deploy",
        "docs",
        "rustfmt.toml",
        "scripts",
        "src",
        "tests",
    ];
    let out = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root())
        .output()
        .expect("git ls-files (the tests run in a clone)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tracked = String::from_utf8(out.stdout).unwrap();
    let stray: HashSet<&str> = tracked
        .lines()
        .map(|l| l.split('/').next().unwrap_or(l))
        .filter(|top| !ALLOWED.contains(top))
        .collect();
    assert!(
        stray.is_empty(),
        "tracked at the top level, not sources or documents: {stray:?}"
    );
}
