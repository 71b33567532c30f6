//! A mount's settings, checked once. [`MountConfig::from_args`] turns
//! `nzfs mount`'s command line into them in the process the user ran; the
//! daemon child receives them whole on its stdin ([`MountConfig::encode`],
//! [`MountConfig::decode`]) and parses no command line. Its argv, which
//! every user may read in `/proc/PID/cmdline` for as long as the mount
//! lives, holds only the redacted store and the mount point: no store
//! option, no secret.
//!
//! The records are `name=value`, each ended by a NUL (as
//! `/proc/PID/environ` is), values as raw bytes: a path need not be UTF-8,
//! and no value from argv or the environment can hold a NUL.
//!
//! Invariant: encoding and decoding each name every field (the structs are
//! destructured and built whole), so a setting added to [`MountConfig`],
//! [`MountPlan`], [`Ownership`] or [`StoreArgs`] and not carried to the
//! daemon does not compile. Decoding refuses a record it does not know and
//! a setting that is missing: a daemon never runs with a default the user
//! did not choose.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::ValueEnum;

use super::options::{Access, MountPlan, mount_options};
use super::{CliError, shown_store};
use crate::cli::{CommitArg, MetadataTtl, MissingChunksArg, MountArgs, NcFormatArg, PassthroughArg, StoreArgs};
use crate::fs::Ownership;

/// The most bytes of settings a daemon child reads from its stdin.
pub const MAX_ENCODED: u64 = 1 << 20;

/// Every setting of one mount, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountConfig {
    /// The store as given (a URL may hold secrets: show [`shown_store`]).
    pub store: PathBuf,
    /// Where to mount (absolute).
    pub mountpoint: PathBuf,
    /// How the store is reached; `-o follow_symlinks` is merged in.
    pub store_args: StoreArgs,
    /// The decoded-chunk cache's budget, in bytes.
    pub cache_bytes: u64,
    /// What a chunk with no object reads as.
    pub missing_chunks: MissingChunksArg,
    /// The format of each group's `.nc`.
    pub nc_format: NcFormatArg,
    /// Show `preview.png` and `index.html`.
    pub previews: bool,
    /// Show `data.tif` and the OME-TIFFs.
    pub tiff: bool,
    /// Decode ahead of sequential readers.
    pub prefetch: bool,
    /// Whether open chunk files are served by the kernel.
    pub passthrough: PassthroughArg,
    /// FUSE threads asked for; `None` sizes them to the CPUs.
    pub threads: Option<u16>,
    /// Decode workers asked for; `None` sizes them to the CPUs.
    pub decoders: Option<u16>,
    /// How often the store's metadata is looked at again (`None`: the
    /// store kind's default).
    pub metadata_ttl: Option<MetadataTtl>,
    /// What `-o` asked for.
    pub mount: MountPlan,
    /// Where a background daemon logs.
    pub log_file: Option<PathBuf>,
    /// `-v` count.
    pub verbose: u8,
    /// Where a writable mount's files wait for their close.
    pub spool_dir: PathBuf,
    /// The most bytes they may hold.
    pub spool_size: u64,
}

/// A writable mount's store: an Icechunk repository, on a branch (every
/// write is a commit there); anything else is refused with why.
fn writable_source(store: &std::path::Path, args: &StoreArgs) -> Result<(), CliError> {
    let shown = shown_store(store);
    let source = store.to_string_lossy();
    if !crate::store::icechunk_source(&source) {
        return Err(CliError::new(format!(
            "--writable (-o rw): {shown} is not an Icechunk repository. nzfs writes only to an Icechunk \
             branch, where every write is a commit that can be undone; mount this store read-only (without --writable, or with -o ro)"
        )));
    }
    let pinned = match (&args.tag, &args.snapshot, args.all_versions) {
        (Some(t), _, _) => Some(format!("tag {t} names one snapshot")),
        (_, Some(s), _) => Some(format!("snapshot {s} is fixed")),
        (_, _, true) => Some("--all-versions shows every version".to_string()),
        _ => None,
    };
    match pinned {
        Some(why) => Err(CliError::new(format!(
            "--writable (-o rw): {why}, which a commit cannot move; mount a branch (--branch NAME, main by default)"
        ))),
        None => Ok(()),
    }
}

impl MountConfig {
    /// Check `nzfs mount`'s arguments: the `-o` list (an unknown option is
    /// refused, with the nearest), and the passthrough mode's rights.
    pub fn from_args(args: &MountArgs) -> Result<MountConfig, CliError> {
        let mut store_args = args.symlinks.clone();
        // A `-o` list nzfs cannot take is a usage error, as `--bogus` is.
        let mut mount = mount_options(&args.options, &args.store, &mut store_args).map_err(|e| e.with_code(2))?;
        mount.writable |= args.writable;
        mount.explicit_commit |= args.commit == Some(CommitArg::Explicit);
        if mount.explicit_commit && !mount.writable {
            return Err(CliError::new(
                "--commit explicit (-o commit=explicit) holds what is written into a writable mount for `nzfs commit`; \
                 add --writable (-o rw)",
            )
            .with_code(2));
        }
        if mount.writable {
            writable_source(&args.store, &store_args).map_err(|e| e.with_code(2))?;
            if args.metadata_ttl == Some(MetadataTtl::Never) {
                return Err(CliError::new(
                    "--writable with --metadata-ttl never: a writable mount shows its own commits by looking at the \
                     branch as each is made; leave --metadata-ttl out (or give it SECONDS)",
                )
                .with_code(2));
            }
        }
        let spool_dir = match (&args.spool_dir, mount.writable) {
            (Some(dir), _) => std::path::absolute(dir)?,
            (None, true) => super::log::default_spool_dir(&args.mountpoint)?,
            (None, false) => PathBuf::new(),
        };
        if args.passthrough == PassthroughArg::Always && !crate::fuse::has_cap_sys_admin() {
            return Err(CliError::new(
                "--passthrough always needs CAP_SYS_ADMIN (run the mount as root); --passthrough auto falls back to reads through the daemon",
            ));
        }
        Ok(MountConfig {
            store: args.store.clone(),
            mountpoint: args.mountpoint.clone(),
            store_args,
            cache_bytes: args.cache_size,
            missing_chunks: args.missing_chunks,
            nc_format: args.nc_format,
            previews: !args.no_previews,
            tiff: !args.no_tiff,
            prefetch: !args.no_prefetch,
            passthrough: args.passthrough,
            threads: args.threads,
            decoders: args.decoders,
            metadata_ttl: args.metadata_ttl,
            mount,
            log_file: args.log_file.clone(),
            verbose: args.verbose,
            spool_dir,
            spool_size: args.spool_size,
        })
    }

    /// The store as it may be shown: without secrets.
    pub fn shown_store(&self) -> String {
        shown_store(&self.store).to_string()
    }

    /// The records a daemon child reads back with [`MountConfig::decode`].
    pub fn encode(&self) -> Vec<u8> {
        let MountConfig {
            store,
            mountpoint,
            store_args,
            cache_bytes,
            missing_chunks,
            nc_format,
            previews,
            tiff,
            prefetch,
            passthrough,
            threads,
            decoders,
            metadata_ttl,
            mount,
            log_file,
            verbose,
            spool_dir,
            spool_size,
        } = self;
        let StoreArgs {
            follow_symlinks,
            store_options,
            anonymous,
            connect_timeout,
            request_timeout,
            retries,
            disk_cache,
            disk_cache_size,
            branch,
            tag,
            snapshot,
            all_versions,
        } = store_args;
        let MountPlan {
            fsname,
            subtype,
            auto_unmount,
            noexec,
            noatime,
            max_read,
            default_permissions,
            access,
            nonempty,
            ownership: Ownership { uid, gid, umask },
            writable,
            explicit_commit,
        } = mount;
        let mut w = Records::default();
        w.bytes("store", store.as_os_str().as_bytes());
        w.bytes("mountpoint", mountpoint.as_os_str().as_bytes());
        w.flag("follow_symlinks", *follow_symlinks);
        for o in store_options {
            w.bytes("store_option", o.as_bytes());
        }
        w.flag("anonymous", *anonymous);
        w.text("connect_timeout", connect_timeout);
        w.text("request_timeout", request_timeout);
        w.text("retries", retries);
        w.optional_path("disk_cache", disk_cache.as_deref());
        w.text("disk_cache_size", disk_cache_size);
        w.optional("branch", branch.as_ref());
        w.optional("tag", tag.as_ref());
        w.optional("snapshot", snapshot.as_ref());
        w.flag("all_versions", *all_versions);
        w.text("cache_bytes", cache_bytes);
        w.choice("missing_chunks", missing_chunks);
        w.choice("nc_format", nc_format);
        w.flag("previews", *previews);
        w.flag("tiff", *tiff);
        w.flag("prefetch", *prefetch);
        w.choice("passthrough", passthrough);
        w.optional("threads", threads.as_ref());
        w.optional("decoders", decoders.as_ref());
        w.optional("metadata_ttl", metadata_ttl.as_ref());
        w.bytes("fsname", fsname.as_bytes());
        w.bytes("subtype", subtype.as_bytes());
        w.flag("auto_unmount", *auto_unmount);
        w.flag("noexec", *noexec);
        w.flag("noatime", *noatime);
        w.optional("max_read", max_read.as_ref());
        w.flag("default_permissions", *default_permissions);
        w.text("access", access.name());
        w.flag("nonempty", *nonempty);
        w.optional("uid", uid.as_ref());
        w.optional("gid", gid.as_ref());
        w.optional("umask", umask.as_ref());
        w.optional_path("log_file", log_file.as_deref());
        w.text("verbose", verbose);
        w.flag("writable", *writable);
        w.flag("explicit_commit", *explicit_commit);
        w.bytes("spool_dir", spool_dir.as_os_str().as_bytes());
        w.text("spool_size", spool_size);
        w.0
    }

    /// Read back what [`MountConfig::encode`] wrote.
    pub fn decode(encoded: &[u8]) -> Result<MountConfig, CliError> {
        let r = Parsed::of(encoded)?;
        let config = MountConfig {
            store: r.path("store")?,
            mountpoint: r.path("mountpoint")?,
            store_args: StoreArgs {
                follow_symlinks: r.flag("follow_symlinks")?,
                store_options: r.all_text("store_option")?,
                anonymous: r.flag("anonymous")?,
                connect_timeout: r.number("connect_timeout")?,
                request_timeout: r.number("request_timeout")?,
                retries: r.number("retries")?,
                disk_cache: r.optional_path("disk_cache"),
                disk_cache_size: r.number("disk_cache_size")?,
                branch: r.optional("branch")?,
                tag: r.optional("tag")?,
                snapshot: r.optional("snapshot")?,
                all_versions: r.flag("all_versions")?,
            },
            cache_bytes: r.number("cache_bytes")?,
            missing_chunks: r.choice("missing_chunks")?,
            nc_format: r.choice("nc_format")?,
            previews: r.flag("previews")?,
            tiff: r.flag("tiff")?,
            prefetch: r.flag("prefetch")?,
            passthrough: r.choice("passthrough")?,
            threads: r.optional("threads")?,
            decoders: r.optional("decoders")?,
            metadata_ttl: r.optional("metadata_ttl")?,
            mount: MountPlan {
                fsname: r.text("fsname")?.to_string(),
                subtype: r.text("subtype")?.to_string(),
                auto_unmount: r.flag("auto_unmount")?,
                noexec: r.flag("noexec")?,
                noatime: r.flag("noatime")?,
                max_read: r.optional("max_read")?,
                default_permissions: r.flag("default_permissions")?,
                access: Access::from_name(r.text("access")?).ok_or_else(|| r.bad("access"))?,
                nonempty: r.flag("nonempty")?,
                ownership: Ownership {
                    uid: r.optional("uid")?,
                    gid: r.optional("gid")?,
                    umask: r.optional("umask")?,
                },
                writable: r.flag("writable")?,
                explicit_commit: r.flag("explicit_commit")?,
            },
            log_file: r.optional_path("log_file"),
            verbose: r.number("verbose")?,
            spool_dir: r.path("spool_dir")?,
            spool_size: r.number("spool_size")?,
        };
        r.all_known()?;
        Ok(config)
    }

    /// Read the settings a parent `nzfs mount` writes to this daemon
    /// child's stdin, at most [`MAX_ENCODED`] bytes.
    pub fn from_stdin() -> Result<MountConfig, CliError> {
        use std::io::Read;
        let mut encoded = Vec::new();
        std::io::stdin()
            .take(MAX_ENCODED + 1)
            .read_to_end(&mut encoded)
            .map_err(|e| CliError::new(format!("cannot read the mount's settings from stdin: {e}")))?;
        if encoded.len() as u64 > MAX_ENCODED {
            return Err(CliError::new(format!(
                "the mount's settings on stdin pass {MAX_ENCODED} bytes"
            )));
        }
        MountConfig::decode(&encoded)
    }
}

/// The records being written.
#[derive(Default)]
struct Records(Vec<u8>);

impl Records {
    fn bytes(&mut self, name: &str, value: &[u8]) {
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(b'=');
        self.0.extend_from_slice(value);
        self.0.push(0);
    }

    fn text(&mut self, name: &str, value: impl ToString) {
        self.bytes(name, value.to_string().as_bytes());
    }

    fn flag(&mut self, name: &str, on: bool) {
        self.bytes(name, if on { b"1" } else { b"0" });
    }

    fn optional(&mut self, name: &str, value: Option<&impl ToString>) {
        if let Some(v) = value {
            self.text(name, v.to_string());
        }
    }

    fn optional_path(&mut self, name: &str, value: Option<&Path>) {
        if let Some(p) = value {
            self.bytes(name, p.as_os_str().as_bytes());
        }
    }

    fn choice(&mut self, name: &str, value: &impl ValueEnum) {
        let v = value.to_possible_value().map(|v| v.get_name().to_string());
        self.bytes(name, v.unwrap_or_default().as_bytes());
    }
}

/// The records read, in order.
struct Parsed<'a> {
    records: Vec<(&'a str, &'a [u8])>,
    /// Which records a field took, to refuse the rest.
    taken: std::cell::RefCell<std::collections::BTreeSet<&'a str>>,
}

impl<'a> Parsed<'a> {
    fn of(encoded: &'a [u8]) -> Result<Parsed<'a>, CliError> {
        let mut records = Vec::new();
        for record in encoded.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let eq = record.iter().position(|&b| b == b'=');
            let name = eq.and_then(|i| std::str::from_utf8(&record[..i]).ok());
            match (name, eq) {
                (Some(name), Some(i)) => records.push((name, &record[i + 1..])),
                _ => return Err(CliError::new("the mount's settings hold a record with no name=")),
            }
        }
        Ok(Parsed {
            records,
            taken: Default::default(),
        })
    }

    fn bad(&self, name: &str) -> CliError {
        CliError::new(format!(
            "the mount's settings give {name} a value this nzfs cannot read (was nzfs upgraded while mounting? mount again)"
        ))
    }

    /// The last record called `name`.
    fn get(&self, name: &'a str) -> Option<&'a [u8]> {
        self.taken.borrow_mut().insert(name);
        self.records.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn required(&self, name: &'a str) -> Result<&'a [u8], CliError> {
        self.get(name).ok_or_else(|| {
            CliError::new(format!(
                "the mount's settings lack {name} (was nzfs upgraded while mounting? mount again)"
            ))
        })
    }

    fn text(&self, name: &'a str) -> Result<&'a str, CliError> {
        std::str::from_utf8(self.required(name)?).map_err(|_| self.bad(name))
    }

    fn all_text(&self, name: &'a str) -> Result<Vec<String>, CliError> {
        self.taken.borrow_mut().insert(name);
        self.records
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| std::str::from_utf8(v).map(str::to_string).map_err(|_| self.bad(name)))
            .collect()
    }

    fn flag(&self, name: &'a str) -> Result<bool, CliError> {
        match self.required(name)? {
            b"1" => Ok(true),
            b"0" => Ok(false),
            _ => Err(self.bad(name)),
        }
    }

    fn number<T: FromStr>(&self, name: &'a str) -> Result<T, CliError> {
        self.text(name)?.parse().map_err(|_| self.bad(name))
    }

    fn optional<T: FromStr>(&self, name: &'a str) -> Result<Option<T>, CliError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse().ok())
                .map(Some)
                .ok_or_else(|| self.bad(name)),
        }
    }

    fn path(&self, name: &'a str) -> Result<PathBuf, CliError> {
        Ok(PathBuf::from(OsStr::from_bytes(self.required(name)?)))
    }

    fn optional_path(&self, name: &'a str) -> Option<PathBuf> {
        self.get(name).map(|v| PathBuf::from(OsStr::from_bytes(v)))
    }

    fn choice<T: ValueEnum>(&self, name: &'a str) -> Result<T, CliError> {
        T::from_str(self.text(name)?, false).map_err(|_| self.bad(name))
    }

    /// Refuse a record no field took.
    fn all_known(&self) -> Result<(), CliError> {
        let taken = self.taken.borrow();
        match self.records.iter().find(|(n, _)| !taken.contains(n)) {
            Some((n, _)) => Err(CliError::new(format!(
                "the mount's settings hold {n}, which this nzfs does not know (was nzfs upgraded while mounting? mount again)"
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parsed(argv: &[&str]) -> MountArgs {
        let argv = crate::cli::normalize_args(argv.iter().map(std::ffi::OsString::from));
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Mount(args) => args,
            _ => unreachable!(),
        }
    }

    /// A command line that sets every setting away from its default comes
    /// back whole, a path that is not UTF-8 included.
    #[test]
    fn every_setting_survives_the_trip_to_the_daemon() {
        let args = parsed(&[
            "nzfs",
            "mount",
            "--cache-size",
            "2GiB",
            "--missing-chunks",
            "error",
            "--nc-format",
            "cdf2",
            "--no-previews",
            "--no-tiff",
            "--no-prefetch",
            "--passthrough",
            "auto",
            "--threads",
            "7",
            "--decoders",
            "9",
            "-o",
            "allow_root,auto_unmount,noexec,noatime,max_read=131072,nonempty,follow_symlinks,uid=12,gid=34,umask=027,fsname=lab,subtype=zz",
            "--store-option",
            "aws_region=eu-west-1",
            "--store-option",
            "aws_secret_access_key=s=e=c",
            "--anonymous",
            "--connect-timeout",
            "3",
            "--request-timeout",
            "4",
            "--retries",
            "6",
            "--disk-cache",
            "/var/cache/n z",
            "--disk-cache-size",
            "3GB",
            "--branch",
            "dev",
            "--log-file",
            "/tmp/a.log",
            "-vv",
            "s3://bucket/data.zarr",
            "/mnt/nz",
        ]);
        let mut config = MountConfig::from_args(&args).unwrap();
        config.mountpoint = PathBuf::from(OsStr::from_bytes(b"/mnt/\xff\tnz"));
        let back = MountConfig::decode(&config.encode()).unwrap();
        assert_eq!(back, config);
        // What -o asked for is decided, not carried as words.
        assert_eq!(back.mount.access, Access::RootAndOwner);
        assert!(back.mount.default_permissions && back.store_args.follow_symlinks);
        assert_eq!(back.mount.ownership.umask, Some(0o027));
        assert_eq!(back.store_args.store_options[1], "aws_secret_access_key=s=e=c");
        // And the other branches of each choice.
        let mut other = config.clone();
        other.store_args.branch = None;
        other.store_args.snapshot = Some("ABCDEFGHIJKLMNOPQRST".into());
        other.mount.access = Access::All;
        other.missing_chunks = MissingChunksArg::Fill;
        other.passthrough = PassthroughArg::Always;
        other.log_file = None;
        other.threads = None;
        assert_eq!(MountConfig::decode(&other.encode()).unwrap(), other);
    }

    #[test]
    fn settings_the_daemon_cannot_read_are_refused_with_the_fix() {
        let config = MountConfig::from_args(&parsed(&["nzfs", "mount", "a.zarr", "/mnt/nz"])).unwrap();
        let encoded = config.encode();
        let mut unknown = encoded.clone();
        unknown.extend_from_slice(b"colour=blue\0");
        let e = MountConfig::decode(&unknown).unwrap_err();
        assert!(
            e.message.contains("colour") && e.message.contains("mount again"),
            "{}",
            e.message
        );
        let text = String::from_utf8(encoded).unwrap();
        let missing = text.replace("tiff=1\0", "");
        assert!(
            MountConfig::decode(missing.as_bytes())
                .unwrap_err()
                .message
                .contains("lack tiff")
        );
        let bad = text.replace("retries=5\0", "retries=-1\0");
        assert!(
            MountConfig::decode(bad.as_bytes())
                .unwrap_err()
                .message
                .contains("retries")
        );
        assert!(MountConfig::decode(b"no equals sign\0").is_err());
        assert!(MountConfig::decode(b"").is_err());
    }
}
