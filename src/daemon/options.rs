//! `nzfs mount -o a,b=c`: the options mount(8), fstab and users give,
//! split into FUSE mount options, the session's access rule and nzfs's
//! own (follow_symlinks, nonempty, ownership overrides). An unknown option
//! is refused with the nearest known one; mount(8)'s generic words are
//! accepted and ignored.
//!
//! Invariant: other users of an `allow_other` (or `allow_root`) mount are
//! always checked by the kernel against the modes nzfs shows
//! (`default_permissions` is added).

use std::path::Path;

use fuser::{MountOption, SessionACL};

use super::{CliError, fail, shown_store};
use crate::cli::StoreArgs;
use crate::fs::Ownership;

/// Who may use the mount besides its owner (`allow_other`, `allow_root`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The user who mounted it (FUSE's default).
    Owner,
    /// That user and root (`-o allow_root`).
    RootAndOwner,
    /// Every user (`-o allow_other`), as the store's modes allow.
    All,
}

impl Access {
    /// Its name in a [`super::MountConfig`]'s records.
    pub(super) fn name(self) -> &'static str {
        match self {
            Access::Owner => "owner",
            Access::RootAndOwner => "root_and_owner",
            Access::All => "all",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Access> {
        [Access::Owner, Access::RootAndOwner, Access::All]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// What `-o a,b=c` values ask for, checked: each field is a decision, not
/// an option word, so that the daemon child receives it without parsing
/// `-o` again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountPlan {
    /// The mount's source in the mount table (`fsname=`).
    pub fsname: String,
    /// The `fuse.` type's suffix in the mount table (`subtype=`).
    pub subtype: String,
    /// Unmount when the daemon exits (`auto_unmount`).
    pub auto_unmount: bool,
    /// No program runs from the mount (`noexec`).
    pub noexec: bool,
    /// No access times (`noatime`).
    pub noatime: bool,
    /// The kernel's largest read request (`max_read=`), passed on as it is.
    pub max_read: Option<u32>,
    /// The kernel checks modes itself: asked for, or implied by
    /// [`Access::All`] and [`Access::RootAndOwner`].
    pub default_permissions: bool,
    /// Who besides the owner may use the mount.
    pub access: Access,
    /// Mount over a non-empty directory.
    pub nonempty: bool,
    /// Owner, group and mode overrides (`uid=`, `gid=`, `umask=`).
    pub ownership: Ownership,
}

impl MountPlan {
    /// The options for the kernel and fusermount3.
    pub(super) fn fuse_options(&self) -> Vec<MountOption> {
        let mut fuse = vec![
            MountOption::RO,
            MountOption::FSName(fsname_option(&self.fsname, rustix::process::geteuid().is_root())),
            // Passed to the kernel (fuser keeps Subtype for fusermount only),
            // so that mountinfo says fuse.nzfs for root mounts too.
            MountOption::CUSTOM(format!("subtype={}", self.subtype)),
            MountOption::NoDev,
            MountOption::NoSuid,
        ];
        for (on, option) in [
            (self.auto_unmount, MountOption::AutoUnmount),
            (self.noexec, MountOption::NoExec),
            (self.noatime, MountOption::NoAtime),
            (self.default_permissions, MountOption::DefaultPermissions),
        ] {
            if on {
                fuse.push(option);
            }
        }
        if let Some(n) = self.max_read {
            fuse.push(MountOption::CUSTOM(format!("max_read={n}")));
        }
        fuse
    }

    /// Who the session answers.
    pub(super) fn session_acl(&self) -> SessionACL {
        match self.access {
            Access::Owner => SessionACL::Owner,
            Access::RootAndOwner => SessionACL::RootAndOwner,
            Access::All => SessionACL::All,
        }
    }
}

/// The fsname as the mount is given it. A normal user's mount goes
/// through fusermount3, which splits its `-o` list at commas: `,` and `\`
/// are escaped with `\` (libfuse's `fuse_opt_add_opt_escaped`, which
/// fusermount3 undoes), so that a store path cannot add options. Root's
/// mount(2) takes the name whole, as the source.
fn fsname_option(fsname: &str, root: bool) -> String {
    if root {
        return fsname.to_string();
    }
    let mut out = String::with_capacity(fsname.len());
    for c in fsname.chars() {
        if c == ',' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn parse_id(name: &str, v: &str, radix: u32) -> Result<u32, CliError> {
    u32::from_str_radix(v, radix).map_err(|_| CliError::new(format!("-o {name}={v}: not a number")))
}

/// Split `-o a,b=c` values into FUSE options, the session's access and
/// nzfs's own; `-o follow_symlinks` is a setting of how the store is
/// reached, so it goes to `store_args`.
pub(super) fn mount_options(raw: &[String], store: &Path, store_args: &mut StoreArgs) -> Result<MountPlan, CliError> {
    let mut plan = MountPlan {
        fsname: format!("nzfs:{}", shown_store(store)),
        subtype: "nzfs".into(),
        auto_unmount: false,
        noexec: false,
        noatime: false,
        max_read: None,
        default_permissions: false,
        access: Access::Owner,
        nonempty: false,
        ownership: Ownership::default(),
    };
    for o in raw
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match o {
            "allow_other" => plan.access = Access::All,
            "allow_root" => plan.access = Access::RootAndOwner,
            "auto_unmount" => plan.auto_unmount = true,
            "default_permissions" => plan.default_permissions = true,
            "follow_symlinks" => store_args.follow_symlinks = true,
            "nonempty" => plan.nonempty = true,
            "ro" => {}
            "rw" => {
                return fail(
                    "-o rw: nzfs is read-only; mount with -o ro (mount(8) and fstab pass rw unless ro is given)",
                );
            }
            "noexec" => plan.noexec = true,
            "noatime" => plan.noatime = true,
            _ if ignored_mount_option(o) => tracing::debug!(option = o, "ignoring a mount(8) option"),
            other => match other.split_once('=') {
                Some(("fsname", v)) => plan.fsname = v.into(),
                Some(("subtype", v)) => plan.subtype = v.into(),
                Some(("uid", v)) => plan.ownership.uid = Some(parse_id("uid", v, 10)?),
                Some(("gid", v)) => plan.ownership.gid = Some(parse_id("gid", v, 10)?),
                Some(("umask", v)) => {
                    let m = parse_id("umask", v, 8)?;
                    if m > 0o777 {
                        return fail(format!("-o umask={v}: not an octal umask like 022"));
                    }
                    plan.ownership.umask = Some(m);
                }
                // The one kernel option worth passing on as it is.
                Some(("max_read", v)) if v.parse::<u32>().is_ok() => plan.max_read = v.parse().ok(),
                // Anything else would reach the kernel, whose EINVAL names
                // nothing: refuse it here, with the nearest.
                _ => return Err(unknown_mount_option(other)),
            },
        }
    }
    // Other users see the store's owners and modes, and the kernel must
    // enforce them: nzfs reads with the daemon's rights, not theirs.
    if plan.access != Access::Owner {
        plan.default_permissions = true;
    }
    Ok(plan)
}

/// The `-o` options nzfs knows, for suggestions.
const MOUNT_OPTIONS: &[&str] = &[
    "allow_other",
    "allow_root",
    "auto_unmount",
    "default_permissions",
    "follow_symlinks",
    "nonempty",
    "ro",
    "noexec",
    "noatime",
    "fsname=",
    "subtype=",
    "uid=",
    "gid=",
    "umask=",
    "max_read=",
];

/// "unknown mount option", with the known option nearest to `o` when one is
/// near enough to be a misspelling.
fn unknown_mount_option(o: &str) -> CliError {
    let key = o.split_once('=').map_or(o, |(k, _)| k);
    let near = MOUNT_OPTIONS
        .iter()
        .map(|k| (strsim::levenshtein(key, k.trim_end_matches('=')), *k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, k)| *d <= 2.max(k.len() / 4));
    CliError::new(match near {
        Some((_, k)) => format!("unknown mount option `{o}`; did you mean `{k}`? (nzfs mount --help lists them)"),
        None => format!(
            "unknown mount option `{o}`; nzfs knows {} (and ignores mount(8)'s generic ones)",
            MOUNT_OPTIONS.join(", ")
        ),
    })
}

/// Options that mount(8), fstab and systemd add and that mean nothing to a
/// read-only FUSE mount, accepted and ignored as other FUSE helpers do.
/// nzfs always mounts nodev,nosuid, so dev and suid are ignored too.
fn ignored_mount_option(o: &str) -> bool {
    const WORDS: &[&str] = &[
        "defaults",
        "auto",
        "noauto",
        "_netdev",
        "nofail",
        "user",
        "users",
        "nouser",
        "owner",
        "group",
        "dev",
        "nodev",
        "suid",
        "nosuid",
        "exec",
        "atime",
        "relatime",
        "strictatime",
        "nostrictatime",
        "lazytime",
        "nolazytime",
        "diratime",
        "nodiratime",
        "sync",
        "async",
        "dirsync",
        "silent",
        "loud",
        "iversion",
        "noiversion",
        "mand",
        "nomand",
    ];
    WORDS.contains(&o)
        || ["x-", "X-", "comment="].iter().any(|p| o.starts_with(p))
        || o.split_once('=').is_some_and(|(k, _)| k == "_netdev" || k == "helper")
}
