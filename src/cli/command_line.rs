//! The command line before clap sees it: mount(8) runs a FUSE helper as
//! `nzfs SOURCE MOUNTPOINT -o OPTIONS`, and nzfs's own settings may sit in
//! those `-o` lists (`cache_size=2GiB`, `anonymous`); both become an
//! ordinary `nzfs mount` command line. A misspelled subcommand gets the
//! nearest one instead of being taken for a SOURCE.
//!
//! Invariant: [`O_SETTINGS`] and [`O_SWITCHES`] are the one list of the
//! settings `-o` may carry (the CSI plugin's vocabulary is built on them).

use std::ffi::OsString;

/// nzfs's own settings as `-o NAME=VALUE` (mount(8), fstab), and the flag
/// each stands for.
pub(crate) const O_SETTINGS: &[(&str, &str)] = &[
    ("cache_size", "--cache-size"),
    ("missing_chunks", "--missing-chunks"),
    ("nc_format", "--nc-format"),
    ("threads", "--threads"),
    ("decoders", "--decoders"),
    ("log_file", "--log-file"),
    ("passthrough", "--passthrough"),
    ("disk_cache", "--disk-cache"),
    ("disk_cache_size", "--disk-cache-size"),
    ("store_option", "--store-option"),
    ("branch", "--branch"),
    ("tag", "--tag"),
    ("snapshot", "--snapshot"),
    ("connect_timeout", "--connect-timeout"),
    ("request_timeout", "--request-timeout"),
    ("retries", "--retries"),
];

/// nzfs's own switches as bare `-o NAME`.
pub(crate) const O_SWITCHES: &[(&str, &str)] = &[
    ("anonymous", "--anonymous"),
    ("verbose", "--verbose"),
    ("all_versions", "--all-versions"),
    ("no_previews", "--no-previews"),
    ("no_tiff", "--no-tiff"),
    ("no_prefetch", "--no-prefetch"),
];

const SUBCOMMANDS: &[&str] = &[
    "mount",
    "unmount",
    "umount",
    "check",
    "cdl",
    "status",
    "completions",
    "csi",
    "man",
    "help",
];

/// The subcommand `word` looks like a misspelling of, so that `nzfs mnt
/// STORE MP` is not taken for mount(8)'s helper form: not a subcommand, not
/// a path or URL that exists, and within a couple of edits of one.
pub fn misspelled_command(word: &str) -> Option<&'static str> {
    if SUBCOMMANDS.contains(&word) || word.starts_with('-') || word.contains('/') || std::path::Path::new(word).exists()
    {
        return None;
    }
    SUBCOMMANDS
        .iter()
        .map(|s| (strsim::levenshtein(word, s), *s))
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
        && !SUBCOMMANDS.contains(&first.as_str())
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
            if let (Some(flag), Some(v)) = (O_SETTINGS.iter().find(|o| o.0 == name).map(|o| o.1), value) {
                out.push(flag.into());
                out.push(v.into());
            } else if let (Some(flag), None) = (O_SWITCHES.iter().find(|o| o.0 == name).map(|o| o.1), value) {
                out.push(flag.into());
            } else {
                kept.push(item);
            }
        }
        if !kept.is_empty() {
            out.push("-o".into());
            out.push(kept.join(",").into());
        }
    }
    out
}
