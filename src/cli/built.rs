//! The command line as this build can honour it: the help texts that name
//! the store kinds it reads, built from the opener's one statement of
//! them ([`Built`], which also refuses a store this build cannot read).
//!
//! Invariants: every help text comes from [`command`], so none names a
//! store kind, URL scheme or option that this build refuses (those options
//! are hidden, and still parsed, so that their use gets the refusal with
//! its fix rather than a usage error); a store this build cannot read is
//! refused by [`Built::refusal`] before anything opens it, with the
//! feature that reads it.

use clap::CommandFactory;

use super::Cli;
pub use crate::open::Built;

/// The help texts of what this nzfs was built to read.
impl Built {
    /// The help of a command's STORE argument.
    fn store_help(&self) -> String {
        let mut s = String::from("The store: a directory (e.g. data.zarr), a zip of one (data.zarr.zip");
        if self.remote {
            s += ", also in a bucket), or a URL: s3://, gs://, az://, http(s)://.";
        } else {
            s += ").";
        }
        if self.icechunk {
            s += " An Icechunk repository: its directory";
            s += match self.remote {
                true => ", or icechunk+s3://, icechunk+gs://, icechunk+az://, icechunk+file://.",
                false => " or icechunk+file://.",
            };
        }
        s += " A kerchunk/VirtualiZarr reference set: refs.json (.json.gz, .json.zst) or a Parquet directory (refs.parq)";
        if self.remote {
            s += ", local or in a bucket";
        }
        if !self.remote || !self.icechunk {
            s += ". ";
            s += &self.missing();
        }
        s
    }

    /// The help of `--metadata-ttl`.
    fn metadata_ttl_help(&self) -> String {
        let mut s = String::from(
            "How often the store's metadata is looked at again, so that an array that grows (an append), \
             a new array or group and changed attributes show in the live mount: SECONDS, or `never`. \
             A look is one stat",
        );
        if self.remote {
            s += " (a HEAD on object storage)";
        }
        s += " per metadata document and one listing per group, made only while something in the mount is looked at \
               [default: 5 for a local directory";
        if self.icechunk {
            s += " or Icechunk repository";
        }
        if self.remote {
            s += ", 60 for object storage and HTTP";
        }
        if self.icechunk {
            s += "; an Icechunk branch follows its tip (one request a look)";
        }
        s += "; a zip or JSON reference set its file and a Parquet set its .zmetadata (one stat";
        if self.remote {
            s += ", or one HEAD in object storage";
        }
        s += ", a look)";
        if self.icechunk {
            s += "; a --tag, --snapshot or --all-versions mount is read once";
        }
        s + "]"
    }

    /// The help of `--store-option`.
    fn store_option_help(&self) -> String {
        match (self.remote, self.icechunk) {
            (false, _) => "A reference set (kerchunk, VirtualiZarr) takes virtual_chunks=PREFIX (e.g. \
                 file:///data/): read its targets there (its own directory needs no option)"
                .to_string(),
            (true, icechunk) => format!(
                "Remote stores: an object_store option KEY=VALUE (repeatable), e.g. \
                 aws_endpoint=http://127.0.0.1:9000 or aws_region=eu-west-1. The usual AWS_*, GOOGLE_* \
                 and AZURE_* environment variables are read too. {} (kerchunk, VirtualiZarr) also take \
                 virtual_chunks=PREFIX (e.g. s3://bucket/ or file:///data/): read the virtual chunks, or \
                 the targets, there (a reference set's own directory needs no option). Targets are read \
                 with the same options and credentials",
                match icechunk {
                    true => "Icechunk repositories and reference sets",
                    false => "Reference sets",
                }
            ),
        }
    }

    /// What this build leaves out, as help says it (empty for a full one).
    fn missing(&self) -> String {
        let out: Vec<&str> = [
            (!self.remote).then_some("object storage and HTTP (feature `remote`)"),
            (!self.icechunk).then_some("Icechunk repositories (feature `icechunk`)"),
        ]
        .into_iter()
        .flatten()
        .collect();
        match out.is_empty() {
            true => String::new(),
            false => format!(
                "This nzfs was built without {}; both are in the default features (cargo build --release)",
                out.join(" and ")
            ),
        }
    }

    /// `nzfs mount`'s examples and notes.
    fn mount_after_help(&self) -> String {
        let mut s = String::from(
            "Examples:\n  \
             nzfs mount data.zarr /mnt/nz                    # background daemon, logs to a file\n  \
             nzfs mount -f -v data.zarr /mnt/nz              # stay attached, log to stderr\n  \
             nzfs mount --cache-size 2GiB data.zarr /mnt/nz  # bigger decoded-chunk cache\n  \
             nzfs mount -o allow_other data.zarr /mnt/nz     # let other users read it, as the store's modes allow\n  \
             nzfs mount -o allow_other,umask=027,gid=100 data.zarr /mnt/nz  # set group and modes instead\n  \
             nzfs mount --missing-chunks error data.zarr /mnt/nz\n",
        );
        if self.remote {
            s += "  nzfs mount --anonymous s3://noaa-nwm-retro-v2-zarr-pds/ /mnt/nwm   # a public bucket\n  \
                  AWS_PROFILE=lab nzfs mount --disk-cache ~/.cache/nzfs s3://bucket/data.zarr /mnt/nz\n";
        }
        s += "  nzfs mount refs.json /mnt/sst                   # a kerchunk set: its netCDF-4 files as one dataset\n";
        if self.remote {
            s += "  nzfs mount --store-option virtual_chunks=s3://bucket/ refs.parq /mnt/sst  # targets elsewhere\n";
        }
        if self.icechunk {
            s += "  nzfs mount --writable repo /mnt/repo            # an Icechunk branch: netCDF files written become commits\n";
        }
        s += "  mount -t fuse.nzfs /data/era5.zarr /mnt/era5 -o ro,allow_other,cache_size=2GiB\n\n\
              mount(8) and /etc/fstab (type fuse.nzfs) run `nzfs SOURCE MOUNTPOINT -o OPTIONS`; every\n\
              setting above can then be an -o option with '_' for '-': cache_size=2GiB, missing_chunks=error,\n\
              threads=4, decoders=8, log_file=/var/log/nzfs.log, passthrough=auto, store_option=KEY=VALUE";
        if self.remote {
            s += ",\ndisk_cache=DIR, disk_cache_size=SIZE, connect_timeout=S, request_timeout=S, retries=N, anonymous";
        }
        s += ", verbose.\n\
              Options mount(8) adds (ro, noauto, nofail, _netdev, user, users, x-systemd.*, dev, suid, ...)\n";
        s += match self.icechunk {
            true => {
                "are accepted. rw is --writable: a mount of an Icechunk branch takes it, and any other store\n\
                 refuses it (only an Icechunk branch takes writes), so an fstab line for one keeps ro.\n\n"
            }
            false => "are accepted. rw is refused: this build takes no writes, so an fstab line keeps ro.\n\n",
        };
        s += "Ctrl-C (with -f) or SIGTERM unmounts cleanly. RUST_LOG=nzfs=debug overrides -v.";
        if !self.remote || !self.icechunk {
            s += "\n\n";
            s += &self.missing();
            s += ".";
        }
        s
    }
}

/// The options only object storage uses.
const REMOTE_ONLY: [&str; 6] = [
    "anonymous",
    "connect_timeout",
    "request_timeout",
    "retries",
    "disk_cache",
    "disk_cache_size",
];

/// The options only Icechunk repositories use.
const ICECHUNK_ONLY: [&str; 4] = ["branch", "tag", "snapshot", "all_versions"];

/// `nzfs mount`'s options only a writable Icechunk branch uses.
const WRITABLE_ONLY: [&str; 4] = ["writable", "spool_dir", "spool_size", "commit"];

/// nzfs's command line with the help texts of `built`.
pub fn command_for(built: Built) -> clap::Command {
    let mut cmd = Cli::command();
    if !built.icechunk {
        cmd = cmd.about(
            "Mount a Zarr v3 (NZ-1.0), Zarr v2 or NCZarr store as directories of decoded chunk files (read-only)",
        );
        let long = cmd
            .get_long_about()
            .map(|a| {
                a.to_string()
                    .replace(
                        " A mount is\nread-only; an Icechunk branch may be mounted --writable, and then netCDF files\nwritten into it become commits.",
                        " A mount is\nread-only.",
                    )
            })
            .unwrap_or_default();
        cmd = cmd.long_about(long);
        // `nzfs commit` and `nzfs discard` are for writable mounts, which
        // such a build has not.
        let without = "This nzfs was built without Icechunk support: no mount is writable, so none holds files to \
                       commit or discard.";
        for sub in ["commit", "discard"] {
            cmd = cmd.mut_subcommand(sub, |s| {
                s.hide(true).about(without).long_about(without).after_help(without)
            });
        }
    }
    for sub in ["mount", "check", "cdl"] {
        cmd = cmd.mut_subcommand(sub, |mut s| {
            let mut hidden: Vec<&str> = Vec::new();
            if !built.remote {
                hidden.extend(REMOTE_ONLY);
            }
            if !built.icechunk {
                hidden.extend(ICECHUNK_ONLY);
                if sub == "mount" {
                    hidden.extend(WRITABLE_ONLY);
                }
            }
            // In place (mut_arg moves an argument last, and so would swap
            // the positionals).
            let (store, ttl, option) = (built.store_help(), built.metadata_ttl_help(), built.store_option_help());
            s = s.mut_args(|a| match a.get_id().as_str() {
                "store" => a.help(store.clone()).long_help(store.clone()),
                "metadata_ttl" => a.help(ttl.clone()).long_help(ttl.clone()),
                "store_options" => a.help(option.clone()).long_help(option.clone()),
                id if hidden.contains(&id) => a.hide(true),
                _ => a,
            });
            if sub == "mount" {
                s = s.after_help(built.mount_after_help());
            }
            s
        });
    }
    cmd
}

/// nzfs's command line as this build honours it: what `main`, the man
/// pages and the shell completions are made from.
pub fn command() -> clap::Command {
    command_for(Built::THIS)
}
