//! The command line before clap sees it: mount(8) runs a FUSE helper as
//! `nzfs SOURCE MOUNTPOINT -o OPTIONS`, and nzfs's own settings may sit in
//! those `-o` lists (`cache_size=2GiB`, `anonymous`); both become an
//! ordinary `nzfs mount` command line. A misspelled subcommand gets the
//! nearest one instead of being taken for a SOURCE.
//!
//! Invariant: the `-o` vocabulary ([`o_options`]) is derived from
//! `nzfs mount`'s own clap definition: every long flag is also a `-o`
//! setting or switch, but the few in [`NOT_IN_O`], so a new flag needs no
//! list edited (the CSI plugin's vocabulary is built on it too).

use std::ffi::OsString;
use std::sync::OnceLock;

/// A setting `-o` may carry: its name there (`cache_size`), the flag it
/// stands for (`--cache-size`), and whether it takes a value (`-o
/// NAME=VALUE`) or is a switch (bare `-o NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OOption {
    pub name: String,
    pub flag: String,
    pub takes_value: bool,
}

/// Long flags of `nzfs mount` that `-o` never carries: how the command
/// runs (`foreground`), what the mount options themselves decide
/// (`follow-symlinks` is the `follow_symlinks` mount option), and clap's
/// own `help`.
const NOT_IN_O: &[&str] = &["foreground", "follow-symlinks", "help"];

/// The `-o` vocabulary: every visible long flag of `nzfs mount` but
/// [`NOT_IN_O`], named with `_` for `-`, from clap's definition.
pub(crate) fn o_options() -> &'static [OOption] {
    static VOCABULARY: OnceLock<Vec<OOption>> = OnceLock::new();
    VOCABULARY.get_or_init(|| {
        use clap::Args;
        super::MountArgs::augment_args(clap::Command::new("mount"))
            .get_arguments()
            .filter(|a| !a.is_positional() && !a.is_hide_set())
            .filter_map(|a| {
                let long = a.get_long()?;
                (!NOT_IN_O.contains(&long)).then(|| OOption {
                    name: long.replace('-', "_"),
                    flag: format!("--{long}"),
                    takes_value: a.get_action().takes_values(),
                })
            })
            .collect()
    })
}

/// The `-o` option called `name`, if any.
pub(crate) fn o_option(name: &str) -> Option<&'static OOption> {
    o_options().iter().find(|o| o.name == name)
}

/// The subcommands and their aliases, from clap's definition (so that a
/// new one needs no list edited), and clap's own `help`.
fn subcommands() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let mut names: Vec<String> = cli
            .get_subcommands()
            .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_all_aliases()))
            .map(str::to_string)
            .collect();
        names.push("help".into());
        names
    })
}

/// Whether `word` names a subcommand (or an alias of one).
fn is_subcommand(word: &str) -> bool {
    subcommands().iter().any(|s| s == word)
}

/// The subcommand `word` looks like a misspelling of, so that `nzfs mnt
/// STORE MP` is not taken for mount(8)'s helper form: not a subcommand, not
/// a path with a `/` or a URL (mount(8) hands the helper its source as
/// fstab says it, and a relative source of one short word there is no
/// store), and within a couple of edits of one. Whether a file of that
/// name lies in the current directory does not matter: `nzfs mnt` beside a
/// `mnt/` folder is still a typo.
pub fn misspelled_command(word: &str) -> Option<&'static str> {
    if is_subcommand(word) || word.starts_with('-') || word.contains('/') || word.contains(':') {
        return None;
    }
    subcommands()
        .iter()
        .map(|s| (strsim::levenshtein(word, s), s.as_str()))
        // One edit from a short command (`cdll`), two from a longer one
        // (`mnt`): a store named `a` is not a misspelled `man`.
        .filter(|(d, s)| *d <= if s.len() <= 4 { 1 } else { 2 } && *d < word.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s)
}

/// Rewrite the command line before clap sees it:
/// - `nzfs SOURCE MOUNTPOINT ...` (how mount(8) runs a FUSE helper) becomes
///   `nzfs mount SOURCE MOUNTPOINT ...`;
/// - in `nzfs mount`, nzfs's own settings inside `-o` lists
///   (`cache_size=2GiB`, `anonymous`) become their flags, and the rest stays
///   in `-o` for the mount options.
pub fn normalize_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let positional = |a: Option<&OsString>| a.is_some_and(|a| !a.to_string_lossy().starts_with('-'));
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    // A misspelled subcommand (`nzfs mnt STORE MP`) is left to
    // clap, which suggests the right one: a word near a subcommand that is
    // not a path or URL here is not mount(8)'s SOURCE.
    if let Some(first) = first
        && !is_subcommand(&first)
        && misspelled_command(&first).is_none()
        && positional(args.get(1))
        && positional(args.get(2))
    {
        args.insert(1, "mount".into());
    }
    if args.get(1).is_none_or(|a| a != "mount") {
        return args;
    }
    let mut out: Vec<OsString> = args.drain(..2).collect();
    let mut rest = args.into_iter();
    while let Some(a) = rest.next() {
        if a == "--" {
            // Only positionals follow: a mount point may start with `-`.
            out.push(a);
            out.extend(rest);
            break;
        }
        let list = if a == "-o" {
            match rest.next() {
                Some(v) => v,
                None => {
                    out.push(a);
                    break;
                }
            }
        } else if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("-o")).filter(|v| !v.is_empty()) {
            v.into()
        } else {
            out.push(a);
            continue;
        };
        let Some(list) = list.to_str().map(str::to_string) else {
            out.extend(["-o".into(), list]);
            continue;
        };
        let mut kept = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (item, None),
            };
            match (o_option(name), value) {
                (Some(o), Some(v)) if o.takes_value => out.extend([o.flag.as_str().into(), v.into()]),
                (Some(o), None) if !o.takes_value => out.push(o.flag.as_str().into()),
                _ => kept.push(item),
            }
        }
        if !kept.is_empty() {
            out.push("-o".into());
            out.push(kept.join(",").into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, MissingChunksArg};
    use clap::Parser;
    use std::ffi::OsString;

    fn norm(args: &[&str]) -> Vec<String> {
        normalize_args(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn mount_helper_form_becomes_nzfs_mount_with_flags() {
        assert_eq!(
            norm(&[
                "nzfs",
                "/d.zarr",
                "/mnt/x",
                "-o",
                "ro,allow_other,cache_size=2GiB,anonymous,threads=4"
            ]),
            [
                "nzfs",
                "mount",
                "/d.zarr",
                "/mnt/x",
                "--cache-size",
                "2GiB",
                "--anonymous",
                "--threads",
                "4",
                "-o",
                "ro,allow_other"
            ]
        );
        assert_eq!(
            norm(&[
                "nzfs",
                "mount",
                "s3://b/d",
                "/m",
                "-ostore_option=aws_region=eu-west-1,ro"
            ]),
            [
                "nzfs",
                "mount",
                "s3://b/d",
                "/m",
                "--store-option",
                "aws_region=eu-west-1",
                "-o",
                "ro"
            ]
        );
        // Only nzfs settings: no -o left.
        assert_eq!(
            norm(&["nzfs", "a", "b", "-o", "log_file=/l"]),
            ["nzfs", "mount", "a", "b", "--log-file", "/l"]
        );
        // After `--`, a word that looks like -o is a positional.
        assert_eq!(
            norm(&["nzfs", "mount", "-o", "ro", "--", "a", "-ofs"]),
            ["nzfs", "mount", "-o", "ro", "--", "a", "-ofs"]
        );
        // Subcommands, flags and lone words are left alone.
        for args in [
            &["nzfs", "check", "a"][..],
            &["nzfs", "cdl", "a", "t2m"],
            &["nzfs", "--help"],
            &["nzfs", "typo"],
            &["nzfs", "status", "/m"],
            &["nzfs", "unmount", "-o", "x"],
        ] {
            assert_eq!(norm(args), args);
        }
        // The result parses as the same command.
        let cli = Cli::try_parse_from(normalize_args(
            ["nzfs", "s", "m", "-o", "ro,cache_size=1GiB,missing_chunks=error"].map(OsString::from),
        ))
        .unwrap();
        let Command::Mount(m) = cli.command else {
            panic!("not a mount")
        };
        assert_eq!(m.cache_size, 1 << 30);
        assert_eq!(m.missing_chunks, MissingChunksArg::Error);
        assert_eq!(m.options, ["ro"]);
    }

    /// The `-o` vocabulary comes from clap's definition of `nzfs mount`.
    #[test]
    fn o_options_are_the_mount_flags() {
        let kind = |n: &str| o_option(n).map(|o| (o.flag.as_str(), o.takes_value));
        assert_eq!(kind("cache_size"), Some(("--cache-size", true)));
        assert_eq!(kind("no_tiff"), Some(("--no-tiff", false)));
        assert_eq!(kind("verbose"), Some(("--verbose", false)));
        for kept in ["foreground", "follow_symlinks", "help", "daemon_child", "options"] {
            assert_eq!(kind(kept), None, "{kept}");
        }
        assert_eq!(kind("metadata_ttl"), Some(("--metadata-ttl", true)));
        assert_eq!(o_options().len(), 27);
        assert_eq!(
            norm(&["nzfs", "s", "m", "-o", "follow_symlinks,disk_cache_size=1GB"]),
            [
                "nzfs",
                "mount",
                "s",
                "m",
                "--disk-cache-size",
                "1GB",
                "-o",
                "follow_symlinks"
            ]
        );
    }
}
