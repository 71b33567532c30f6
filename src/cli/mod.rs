//! The command line: clap definitions, and [`normalize_args`], which turns
//! the form mount(8) and fstab use (`nzfs SOURCE MOUNTPOINT -o OPTIONS`,
//! through fuse3's `mount.fuse3`) into `nzfs mount` with flags, so that one
//! clap definition validates both. Help texts teach by example.
//!
//! The doc comments of clap's structs are `--help` text, written for a
//! terminal: `<image>.ome.tif` there is not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod built;
mod command_line;
mod size;
mod values;
pub use built::{Built, command, command_for};
pub use command_line::{misspelled_command, normalize_args};
#[cfg(feature = "csi")]
pub(crate) use command_line::{o_option, o_options};
pub use size::{SizeError, parse_size};
pub use values::{CommitArg, MetadataTtl, MetadataTtlError, MissingChunksArg, NcFormatArg, PassthroughArg};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "nzfs",
    version,
    long_version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("NZFS_BUILD_INFO"), ")"),
    about = "Mount a Zarr v3 (NZ-1.0), Zarr v2 or NCZarr store as directories of decoded chunk files \
        (read-only; an Icechunk branch may be mounted --writable)",
    long_about = "Mount a Zarr store: Zarr v3 (NZ-1.0 NetCDF-Zarr convention), Zarr v2\n\
        (zarr-python, xarray; consolidated .zmetadata too) or netCDF-C's NCZarr. A mount is\n\
        read-only; an Icechunk branch may be mounted --writable, and then netCDF files\n\
        written into it become commits.\n\n\
        Every group and array is a directory; every array directory holds one raw,\n\
        decoded .bin file per chunk (C order, native byte order), data.bin (the whole\n\
        array), and a header.cdl that describes it the way `ncdump -h` would. String\n\
        arrays also hold data.txt, one value per line. Every group holds a virtual\n\
        netCDF file, <group>.nc, for ncdump, CDO and NCO.",
    after_help = "Examples:\n  \
        nzfs mount data.zarr /mnt/nz\n  \
        ls /mnt/nz/t2m\n  \
        cat /mnt/nz/station/data.txt\n  \
        python -c 'import numpy as np; print(np.fromfile(\"/mnt/nz/t2m/0.0.0.bin\", \"<f4\"))'\n  \
        nzfs unmount /mnt/nz\n  \
        nzfs cdl data.zarr t2m\n\n\
        Exit status: 0 done, 1 failed, 2 usage error, 3 the store is not there."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// nzfs's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Mount STORE at MOUNTPOINT (returns once the mount is live)
    Mount(MountArgs),
    /// Unmount a mount point made by `nzfs mount`
    #[command(
        visible_alias = "umount",
        after_help = "Examples:\n  nzfs unmount /mnt/nz\n  nzfs unmount --lazy /mnt/nz   # detach now, even if busy"
    )]
    Unmount(UnmountArgs),
    /// Commit what a writable mount made with --commit explicit holds: every new NAME.nc, write into an array's file, mkdir and rm -r since the last commit, as one commit
    #[command(
        after_help = "Examples:\n  nzfs mount --writable --commit explicit repo/ /mnt/repo\n  \
        cdo timmean in.nc /mnt/repo/mean.nc; cdo timmax in.nc /mnt/repo/max.nc\n  \
        mkdir /mnt/repo/run42; cp out.nc /mnt/repo/run42/   # a group and a file in it\n  \
        nzfs status /mnt/repo                      # lists what is held\n  \
        nzfs commit /mnt/repo -m \"run 42\"        # one commit of all four\n\n\
        A file still open for writing is not committed: the commit is refused until it is closed.\n\
        rm /mnt/repo/max.nc drops one held file instead; nzfs discard /mnt/repo drops them all."
    )]
    Commit(CommitArgs),
    /// Drop what a writable mount made with --commit explicit holds: its new files, writes into arrays' files, mkdir and rm -r (the branch does not move)
    #[command(after_help = "Examples:\n  nzfs status /mnt/repo    # lists what is held\n  \
        nzfs discard /mnt/repo   # drops each, naming it\n\n\
        Only what is held is dropped: a file still open for writing stays, and nothing committed changes.")]
    Discard(DiscardArgs),
    /// Check a store against the NZ-1.0 convention (exit 0 conforms, 1 violates it or does not declare it, 2 unreadable)
    #[command(
        after_help = "Examples:\n  nzfs check data.zarr\n  nzfs check --json data.zarr | jq .findings\n  \
        nzfs check --no-values data.zarr   # metadata rules only, read no chunks\n\n\
        Each finding names the node path, the rule and its NZ section, what was expected and what\n\
        was found. Errors are broken MUSTs, warnings broken SHOULDs."
    )]
    Check(CheckArgs),
    /// Print the CDL header of the store, or of one group or array in it, without mounting
    #[command(
        after_help = "Examples:\n  nzfs cdl data.zarr            # the whole hierarchy\n  nzfs cdl data.zarr group/t2m  # one array"
    )]
    Cdl(CdlArgs),
    /// Show what a live mount is doing: store, uptime, cache, decodes, store reads, errors
    #[command(
        after_help = "Examples:\n  nzfs status /mnt/nz\n  nzfs status --json /mnt/nz | jq .cache\n  \
        watch -n1 nzfs status /mnt/nz\n\n\
        The mount answers an ioctl of its root directory with the JSON document,\n\
        so anyone who can open the mount point can ask, and nothing beside the\n\
        mount is needed (a socket, a port)."
    )]
    Status(StatusArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(after_help = "Examples:\n  \
        nzfs completions bash > /usr/share/bash-completion/completions/nzfs\n  \
        nzfs completions zsh > /usr/share/zsh/vendor-completions/_nzfs\n  \
        nzfs completions fish > /usr/share/fish/vendor_completions.d/nzfs.fish\n  \
        source <(nzfs completions bash)   # this shell only")]
    Completions(CompletionsArgs),
    /// Serve the Kubernetes CSI node plugin (Identity and Node services) on a unix socket
    #[cfg(feature = "csi")]
    Csi(CsiArgs),
    /// Write the man pages (nzfs.1 and one per subcommand) into a directory
    #[command(after_help = "Examples:\n  \
        nzfs man /usr/local/share/man/man1 && mandb -q\n  \
        nzfs man /tmp/man && man -l /tmp/man/nzfs-mount.1")]
    Man(ManArgs),
    /// Install a copy of this nzfs where mount(8), fstab and systemd find it, and its man pages
    #[command(after_help = "Examples:\n  \
        sudo $(command -v nzfs) install-helper           # /usr/local/bin/nzfs, /usr/local/share/man/man1\n  \
        sudo $(command -v nzfs) install-helper --remove\n\n\
        mount(8) runs the helper of a fuse.nzfs line (fstab, systemd mount units, mount -t fuse.nzfs)\n\
        from a fixed PATH, so an nzfs installed by pip into a virtual environment or ~/.local/bin is\n\
        not found there (\"/bin/sh: 1: nzfs: not found\"). This copies the nzfs that runs it to\n\
        PREFIX/bin/nzfs, owned by whoever runs it (root then runs root's file, not one a user can\n\
        replace), and writes its man pages to PREFIX/share/man/man1, replacing files, never writing\n\
        through links. Run it again after upgrading nzfs. An existing PREFIX/bin/nzfs that is not an\n\
        nzfs is left alone, and so is a PREFIX/bin writable by others.")]
    InstallHelper(InstallHelperArgs),
}

/// The driver name a `CSIDriver` object and PersistentVolumes name.
pub const CSI_DRIVER_NAME: &str = "nzfs.csi.nzfs.dev";

/// `nzfs csi` as the command line gives it (served by the csi module).
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  \
    nzfs csi --endpoint unix:///csi/csi.sock --node-id $(hostname)\n  \
    nzfs csi --endpoint unix:///csi/csi.sock --node-id node-1 --mount-cgroup /sys/fs/cgroup/nzfs-mounts\n\n\
    The kubelet reaches the plugin through node-driver-registrar; deploy/kubernetes/ in the\n\
    source holds the CSIDriver, the DaemonSet and an example volume. A volume's\n\
    volumeAttributes name the store (store: s3://bucket/era5.zarr) and nzfs mount's long\n\
    options without dashes in front (cache-size: 2GiB, missing-chunks: error, store-option:\n\
    aws_region=eu-west-1, anonymous: \"true\"); its nodePublishSecretRef's keys\n\
    (AWS_ACCESS_KEY_ID, ...) become the mount daemon's environment.")]
pub struct CsiArgs {
    /// Where to serve gRPC: unix:///PATH (a stale socket file there is replaced)
    #[arg(long)]
    pub endpoint: String,
    /// This node's name, as NodeGetInfo reports it (the Kubernetes node name)
    #[arg(long)]
    pub node_id: String,
    /// The driver name GetPluginInfo reports
    #[arg(long, default_value = CSI_DRIVER_NAME)]
    pub driver_name: String,
    /// Move each mount daemon into this cgroup (v2; created if missing), out
    /// of the plugin container's, so that restarting the plugin leaves the
    /// workloads' mounts up. In Kubernetes: the host's /sys/fs/cgroup
    /// mounted into the plugin, and hostPID
    #[arg(long)]
    pub mount_cgroup: Option<PathBuf>,
    /// Write each mount daemon's log here, one file per volume (default:
    /// nzfs's own log directory)
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Publish and unpublish only target paths below this directory (the
    /// kubelet's root directory); a target outside it, with `..`, or
    /// through a symlink is refused
    #[arg(long, default_value = "/var/lib/kubelet")]
    pub target_root: PathBuf,
    /// Keep a record of each publish here, so that unpublish unmounts only
    /// what this plugin mounted and removes only the directories it
    /// created (default: `published/` beside the --endpoint socket, on the
    /// node, so that a restarted plugin finds them)
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

/// `nzfs status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The mount point of a running nzfs mount (none: list the nzfs mounts
    /// that are live, each with its store)
    pub mountpoint: Option<PathBuf>,
    /// Print the status as one JSON document (shape in docs/troubleshooting.md)
    #[arg(long)]
    pub json: bool,
}

/// `nzfs completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `nzfs install-helper`.
#[derive(Debug, Args)]
pub struct InstallHelperArgs {
    /// Where to install: PREFIX/bin/nzfs and PREFIX/share/man/man1
    #[arg(long, default_value = "/usr/local")]
    pub prefix: PathBuf,
    /// Remove what an earlier install-helper put there instead
    #[arg(long)]
    pub remove: bool,
}

/// `nzfs man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory for nzfs.1, nzfs-mount.1, ... (created if missing)
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
/// `nzfs mount`, as given; checked once into a `MountConfig` (module `daemon`).
pub struct MountArgs {
    /// The store (its help, and the examples, are this build's: built.rs)
    pub store: PathBuf,
    /// An empty directory to mount on
    pub mountpoint: PathBuf,
    /// Stay in the foreground and log to stderr
    #[arg(short, long)]
    pub foreground: bool,
    /// Budget for decoded chunks held in memory, e.g. 512MiB, 2GiB, 1000000
    /// (GB, MB are powers of 10).
    /// From a local store, a chunk read whole is then left to the kernel page
    /// cache rather than held twice
    #[arg(long, default_value = "512MiB", value_parser = parse_size)]
    pub cache_size: u64,
    /// What a chunk with no object in the store reads as
    #[arg(long, value_enum, default_value_t = MissingChunksArg::Fill)]
    pub missing_chunks: MissingChunksArg,
    /// The format of each group's .nc: `auto` is CDF-2, or CDF-5 when a
    /// variable or attribute needs 64-bit integers (int64 and uint64, times)
    /// or a variable reaches 4 GiB; `cdf2` keeps every .nc CDF-2 for readers
    /// without CDF-5 (GDAL 3.6, Debian 12's): such variables are left out,
    /// named in `_nz_omitted_reasons`, and integer attributes past 32 bits
    /// become doubles
    #[arg(long, value_enum, default_value_t = NcFormatArg::Auto)]
    pub nc_format: NcFormatArg,
    /// Show no preview.png in array directories and no index.html at the
    /// root (they are on by default: a picture of each array's first 2-D
    /// plane, rendered on first read, and a page of the whole dataset)
    #[arg(long)]
    pub no_previews: bool,
    /// Show no TIFF files (on by default: data.tif in each numeric array
    /// of two or more dimensions, a multi-page TIFF, and <image>.ome.tif in
    /// each OME-Zarr image's group, its levels as an OME-TIFF pyramid; for
    /// ImageJ, Fiji and other TIFF readers)
    #[arg(long)]
    pub no_tiff: bool,
    /// Decode only what is read: no chunks decoded (or requested from
    /// object storage) ahead of a sequential reader. For metered storage
    /// or strictly random access; sequential reads get slower
    #[arg(long)]
    pub no_prefetch: bool,
    /// Serve open chunk files from kernel-held memory (FUSE passthrough:
    /// each chunk of an unsharded array decoded once into a sealed memfd
    /// that the kernel reads, no round trip per read). Needs CAP_SYS_ADMIN
    /// (root or a system mount) and Linux 6.9+. auto: use it when possible,
    /// else read through the daemon; the log says which. The default is
    /// never: measured here, the daemon path with the kernel page cache is as
    /// fast cold and faster warm (see docs/performance.md).
    /// The memfds count against --cache-size.
    #[arg(long, value_enum, default_value_t = PassthroughArg::Never)]
    pub passthrough: PassthroughArg,
    /// FUSE worker threads [default: the CPUs this process may use (its
    /// affinity mask and cgroup quota), from 2 to 32]. `nzfs status` shows
    /// what was chosen and why
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    /// Threads that decode chunks ahead of sequential readers [default: the
    /// CPUs this process may use, from 2 to 64; at least 16 for object
    /// storage, to keep that many requests in flight]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub decoders: Option<u16>,
    /// How often the store's metadata is looked at again (help: built.rs)
    #[arg(long, value_name = "SECONDS|never")]
    pub metadata_ttl: Option<MetadataTtl>,
    /// Mount an Icechunk repository's branch writable (also -o rw): a
    /// netCDF file (classic CDF-1, CDF-2 or CDF-5, or netCDF-4, nested
    /// groups, strings, enums and compounds included) written as NAME.nc
    /// (or an HDF5 file from h5py as NAME.h5) into
    /// a group's directory becomes, when its writer closes it, the group
    /// NAME beside it, in one commit on the branch (`cdo timmean in.nc
    /// /mnt/repo/derived/mean.nc`); writes into an array's data.bin or chunk
    /// files that keep their size (`dd conv=notrunc`, numpy.memmap r+)
    /// become its chunks, re-encoded, at each close and fsync; mkdir makes a
    /// group and rm -r removes a node. `nzfs status` lists the commits. Only
    /// you and root may write. Refused for any other store, a --tag, a
    /// --snapshot and --all-versions (docs/writing.md)
    #[arg(long)]
    pub writable: bool,
    /// When a writable mount commits a new NAME.nc and a write into an
    /// array's file: at its close, one commit each (close, the default),
    /// or all of them in one commit at `nzfs commit MOUNTPOINT` (explicit;
    /// also -o commit=explicit): a model run's files land together, and a
    /// reader of the branch never sees the run half done. `nzfs status`
    /// lists what is held, `nzfs discard` drops it, and `nzfs unmount`
    /// refuses while anything is. mkdir and rm -r are held too
    #[arg(long, value_enum, value_name = "WHEN")]
    pub commit: Option<CommitArg>,
    /// Where files being written wait for their writer's close (made 0700)
    /// [default: $XDG_STATE_HOME/nzfs/spool/<mountpoint>, else
    /// ~/.local/state/nzfs/spool/, else for root /var/lib/nzfs/spool/]
    #[arg(long, value_name = "DIR")]
    pub spool_dir: Option<PathBuf>,
    /// The most bytes files being written may hold in the spool together
    /// (a write past it fails with ENOSPC)
    #[arg(long, default_value = "16GiB", value_parser = parse_size)]
    pub spool_size: u64,
    /// Mount options, comma-separated: allow_other (also turns on
    /// default_permissions), allow_root, auto_unmount, default_permissions,
    /// fsname=NAME, nonempty, uid=N, gid=N, umask=OCTAL, follow_symlinks, ...
    #[arg(short = 'o', value_name = "OPTIONS", action = clap::ArgAction::Append)]
    pub options: Vec<String>,
    /// How the store is reached.
    #[command(flatten)]
    pub symlinks: StoreArgs,
    /// Log file in background mode [default: $XDG_STATE_HOME/nzfs/<mountpoint>.log, else
    /// ~/.local/state/nzfs/, else for root /var/log/nzfs/]; never opened through a link
    #[arg(long, overrides_with = "log_file")]
    pub log_file: Option<PathBuf>,
    /// More log detail (-v debug, -vv trace)
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Internal: run as the background daemon of a `nzfs mount`
    #[arg(long, hide = true)]
    pub daemon_child: bool,
}

impl MountArgs {
    /// Local paths made absolute, `..` resolved (`status`,
    /// `/proc/mounts` and the log file's name showed `tests/data/x.zarr/`
    /// and `tmp_.._mnt`): the mount point, and the store unless it is a URL.
    /// A path that does not exist is left for the checks to report.
    pub fn absolutize(&mut self) {
        let fix = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        if !crate::store::is_url(&self.store.to_string_lossy())
            && let Some(abs) = fix(&self.store)
        {
            self.store = abs;
        }
        if let Some(abs) = fix(&self.mountpoint) {
            self.mountpoint = abs;
        }
    }
}

/// How the store is reached (shared by every command): symlinks of a
/// local store, and the options of a remote one (s3://, gs://, az://,
/// http(s)://).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct StoreArgs {
    /// Follow symlinks that lead outside the store (by default a symlink
    /// is followed only while it stays inside the store). WARNING, for a
    /// mount: with -o allow_other every user then sees any file the daemon
    /// can read that a symlink in the store points at.
    #[arg(long)]
    pub follow_symlinks: bool,
    /// An option of the store, KEY=VALUE (help: built.rs)
    #[arg(long = "store-option", value_name = "KEY=VALUE")]
    pub store_options: Vec<String>,
    /// Remote stores: read a public bucket without credentials (like
    /// `aws --no-sign-request`).
    #[arg(long)]
    pub anonymous: bool,
    /// Remote stores: seconds to wait for a connection.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub connect_timeout: u64,
    /// Remote stores: seconds a request may take, retries aside (a stalled
    /// server gives EIO after this, never a hang).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub request_timeout: u64,
    /// Remote stores: retries of a failed request (5xx, 429 and 503
    /// throttling, connection resets, timeouts), with exponential backoff.
    /// No retry starts later than two request timeouts after the first
    /// attempt, so a read fails within about three.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=20))]
    pub retries: u8,
    /// Remote stores: keep raw chunk objects in DIR, so that the next read,
    /// and the next mount or command given the same DIR and URL, download
    /// nothing again. Safe to share between mounts and commands. Metadata is always read afresh, and a cached
    /// object is used only while the store holds the same version of it
    /// (one HEAD per object a minute at most): a chunk rewritten in place
    /// is read anew.
    #[arg(long, value_name = "DIR")]
    pub disk_cache: Option<PathBuf>,
    /// The disk cache's budget, e.g. 20GiB (least recently used entries go first)
    #[arg(long, value_name = "SIZE", default_value = "10GiB", value_parser = parse_size, requires = "disk_cache")]
    pub disk_cache_size: u64,
    /// Icechunk repositories: show the tip of branch NAME (default: main).
    /// A mount follows the tip as the branch moves (it looks every
    /// --metadata-ttl); check and cdl read the tip as they start.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["tag", "snapshot", "all_versions"])]
    pub branch: Option<String>,
    /// Icechunk repositories: show the snapshot tag NAME points at.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["snapshot", "all_versions"])]
    pub tag: Option<String>,
    /// Icechunk repositories: show snapshot ID (20 characters, as `nzfs
    /// mount --all-versions` lists them under snapshots/).
    #[arg(long, value_name = "ID", conflicts_with = "all_versions")]
    pub snapshot: Option<String>,
    /// Icechunk repositories: show every version, as branches/NAME/,
    /// tags/NAME/ and snapshots/ID/ (each header.cdl names its snapshot,
    /// commit time and message).
    #[arg(long)]
    pub all_versions: bool,
}

impl StoreArgs {
    /// The Icechunk version asked for, if any (`--all-versions` is not one).
    pub fn version(&self) -> Option<crate::store::Version> {
        use crate::store::Version;
        let named = self.branch.clone().map(Version::Branch);
        named
            .or_else(|| self.tag.clone().map(Version::Tag))
            .or_else(|| self.snapshot.clone().map(Version::Snapshot))
    }

    /// What to open: `store` read as these flags say, told its kind (a
    /// refusal exits as [`CliError`]'s `From<SourceError>` says).
    pub fn source(&self, store: &std::path::Path) -> Result<crate::open::Source, CliError> {
        let mut options = Vec::new();
        for kv in &self.store_options {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| CliError::new(format!("--store-option {kv:?}: expected KEY=VALUE")))?;
            options.push((k.trim().to_ascii_lowercase(), v.to_string()));
        }
        let access = crate::open::Access {
            symlinks: self.policy(),
            options,
            anonymous: self.anonymous,
            retries: self.retries,
            connect_timeout: std::time::Duration::from_secs(self.connect_timeout),
            request_timeout: std::time::Duration::from_secs(self.request_timeout),
            disk_cache: self.disk_cache.clone().map(|d| (d, self.disk_cache_size)),
        };
        let versions = match self.all_versions {
            true => crate::open::Versions::All,
            false => crate::open::Versions::One(self.version()),
        };
        Ok(crate::open::Source::new(store, access, versions)?)
    }

    /// Which symlinks of a local store are followed.
    pub fn policy(&self) -> crate::store::Symlinks {
        if self.follow_symlinks {
            crate::store::Symlinks::Follow
        } else {
            crate::store::Symlinks::Beneath
        }
    }
}

/// `nzfs unmount`.
#[derive(Debug, Args)]
pub struct UnmountArgs {
    /// The mount point
    pub mountpoint: PathBuf,
    /// Detach now even if busy; the mount goes away when the last user closes it
    #[arg(short = 'z', long)]
    pub lazy: bool,
}

/// `nzfs commit`.
#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The mount point of a writable mount made with --commit explicit
    pub mountpoint: PathBuf,
    /// The commit's message [default: one naming the files, the program and you]
    #[arg(short = 'm', long, value_name = "MESSAGE")]
    pub message: Option<String>,
}

/// `nzfs discard`.
#[derive(Debug, Args)]
pub struct DiscardArgs {
    /// The mount point of a writable mount made with --commit explicit
    pub mountpoint: PathBuf,
}

/// `nzfs check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The store (its help, and the examples, are this build's: built.rs)
    pub store: PathBuf,
    /// Print the findings as one JSON document (shape in docs/usage.md)
    #[arg(long)]
    pub json: bool,
    /// Skip reading coordinate values (the monotonicity check)
    #[arg(long)]
    pub no_values: bool,
    /// How the store is reached.
    #[command(flatten)]
    pub symlinks: StoreArgs,
}

/// `nzfs cdl`.
#[derive(Debug, Args)]
pub struct CdlArgs {
    /// The store (its help, and the examples, are this build's: built.rs)
    pub store: PathBuf,
    /// A group or array path inside the store, e.g. `group/t2m` (default: the root)
    pub node_path: Option<String>,
    /// How the store is reached.
    #[command(flatten)]
    pub symlinks: StoreArgs,
}

#[cfg(test)]
mod tests;

/// A failure to report on one line, with a non-zero exit: 1, or 2 for a
/// request that names what is not there (an Icechunk branch, tag or
/// snapshot), as `nzfs check` uses 2 for a store it cannot open.
#[derive(Debug)]
pub struct CliError {
    /// What failed, and what to do about it.
    pub message: String,
    /// The exit status.
    pub code: u8,
}

impl CliError {
    /// A failure with exit status 1.
    pub fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 1,
        }
    }

    /// The same failure, exiting with `code`.
    pub fn with_code(self, code: u8) -> CliError {
        CliError { code, ..self }
    }

    /// A store that is not there (no such path, bucket or prefix, or no
    /// Zarr metadata in it): exits with [`EXIT_NOT_FOUND`].
    pub fn not_found(message: impl Into<String>) -> CliError {
        CliError::new(message).with_code(EXIT_NOT_FOUND)
    }
}

/// The exit status of a command whose store is not there (the CSI plugin
/// answers `NOT_FOUND` for it). 1 is any other failure, 2 a usage error.
pub const EXIT_NOT_FOUND: u8 = 3;

/// A source that cannot be opened: one that is not there exits with
/// [`EXIT_NOT_FOUND`], a version that does not exist with 2.
impl From<crate::open::SourceError> for CliError {
    fn from(e: crate::open::SourceError) -> Self {
        use crate::open::SourceError;
        match e {
            SourceError::NotFound(m) => CliError::not_found(m),
            SourceError::NoSuchVersion(m) => CliError::new(m).with_code(2),
            SourceError::Refused(m) => CliError::new(m),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::new(e.to_string())
    }
}
