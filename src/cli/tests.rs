//! The command line's definition and its help texts.

use super::*;

#[test]
fn clap_definition_is_valid() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

/// The long help of `nzfs` and of each subcommand.
fn help_texts() -> Vec<(String, String)> {
    use clap::CommandFactory;
    let mut cli = Cli::command();
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
