//! The command line's definition and its help texts.

use super::*;

#[test]
fn clap_definition_is_valid() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

/// The long help of `nzfs` and of each subcommand, as this build shows it.
fn help_texts() -> Vec<(String, String)> {
    help_texts_of(Built::THIS)
}

/// The long help of `nzfs` and of each subcommand, as a build of `built`
/// shows it.
fn help_texts_of(built: Built) -> Vec<(String, String)> {
    let mut cli = command_for(built);
    let mut out = vec![("nzfs".to_string(), cli.render_long_help().to_string())];
    for sub in cli.get_subcommands_mut() {
        out.push((sub.get_name().to_string(), sub.render_long_help().to_string()));
    }
    out
}

/// Help names only behaviour that exists: a mount of an Icechunk
/// branch follows its tip, `-o rw` is `--writable`, nzfs is read-only
/// but for a writable branch, and check and cdl are not told about
/// mounts' settings as if they were theirs.
#[test]
fn help_says_what_nzfs_does() {
    let texts = help_texts();
    for (name, text) in &texts {
        for stale in [
            "the mount does not follow",
            "rw is refused, because nzfs is read-only",
            "-o allow_other this shows",
            "and the next mount of the same URL",
        ] {
            assert!(!text.contains(stale), "nzfs {name} --help still says {stale:?}");
        }
        if text.contains("read-only") && name == "nzfs" {
            assert!(
                text.contains("--writable"),
                "nzfs --help says read-only without --writable"
            );
        }
    }
    let mount = &texts.iter().find(|(n, _)| n == "mount").unwrap().1;
    assert!(mount.contains("rw is --writable"), "{mount}");
    assert!(mount.contains("A mount follows the tip"), "{mount}");
}

/// A build without object storage or Icechunk names neither in any help
/// text but to say it was built without them, hides their options, and
/// refuses such a store with the feature that reads it; the full build
/// lists them. Old code: every build's help listed s3://, Icechunk and
/// --writable, and a URL was read as a path ("No such file or directory").
#[test]
fn help_lists_only_what_the_build_reads() {
    let local = Built {
        remote: false,
        icechunk: false,
    };
    let without = "This nzfs was built without";
    for (name, text) in help_texts_of(local) {
        // The csi feature needs remote: no such build has `nzfs csi`.
        if name == "csi" {
            continue;
        }
        let rest: String = text
            .lines()
            .filter(|l| !l.contains(without))
            .collect::<Vec<_>>()
            .join("\n");
        for absent in [
            "s3://",
            "gs://",
            "az://",
            "Icechunk",
            "--writable",
            "--anonymous",
            "--disk-cache",
            "--branch",
        ] {
            assert!(
                !rest.contains(absent),
                "nzfs {name} --help of a local-only build says {absent:?}:\n{rest}"
            );
        }
        if ["mount", "check", "cdl"].contains(&name.as_str()) {
            assert!(
                text.contains(without),
                "nzfs {name} --help says nothing of what is left out"
            );
        }
    }
    let full = Built {
        remote: true,
        icechunk: true,
    };
    let mount = help_texts_of(full).into_iter().find(|(n, _)| n == "mount").unwrap().1;
    for present in [
        "s3://",
        "icechunk+s3://",
        "--writable",
        "--anonymous",
        "--disk-cache",
        "--branch",
    ] {
        assert!(
            mount.contains(present),
            "the full build's mount --help lacks {present:?}"
        );
    }
    assert!(!mount.contains(without));
    let refused = local.refusal("s3://bucket/x.zarr").unwrap();
    assert!(refused.contains("built without object storage support"), "{refused}");
    let refused = local.refusal("icechunk+file:///data/repo").unwrap();
    assert!(refused.contains("built without Icechunk support"), "{refused}");
    assert_eq!(full.refusal("s3://bucket/x.zarr"), None);
    assert_eq!(local.refusal("data.zarr"), None);
}
