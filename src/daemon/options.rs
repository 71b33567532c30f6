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
    /// Writable (`rw`, or `--writable`): an Icechunk branch only.
    pub writable: bool,
    /// New files wait for `nzfs commit` (`--commit explicit`, which
    /// `-o commit=explicit` is), not each its own close.
    pub explicit_commit: bool,
}

impl MountPlan {
    /// The options for the kernel and fusermount3.
    pub(super) fn fuse_options(&self) -> Vec<MountOption> {
        let mut fuse = vec![
            if self.writable {
                MountOption::RW
            } else {
                MountOption::RO
            },
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
        writable: false,
        explicit_commit: false,
    };
    for o in raw
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if ignored_mount_option(o) {
            tracing::debug!(option = o, "ignoring a mount(8) option");
            continue;
        }
        let (key, value) = match o.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (o, None),
        };
        // Anything nzfs does not know would reach the kernel, whose EINVAL
        // names nothing: refuse it here, with the nearest.
        match (
            MOUNT_OPTIONS.iter().find(|(name, _)| *name == key).map(|(_, a)| a),
            value,
        ) {
            (Some(Apply::Flag(apply)), None) => apply(&mut plan, store_args)?,
            (Some(Apply::Value(apply)), Some(v)) => apply(&mut plan, v).map_err(|()| unknown_mount_option(o))??,
            _ => return Err(unknown_mount_option(o)),
        }
    }
    // Other users see the store's owners and modes, and the kernel must
    // enforce them: nzfs reads with the daemon's rights, not theirs.
    if plan.access != Access::Owner {
        plan.default_permissions = true;
    }
    Ok(plan)
}

/// What one `-o` option nzfs knows does to the plan.
enum Apply {
    /// A word alone (`allow_other`).
    Flag(fn(&mut MountPlan, &mut StoreArgs) -> Result<(), CliError>),
    /// `key=value`; `Err(())` where the value is not one the option takes,
    /// which is refused as an unknown option.
    Value(fn(&mut MountPlan, &str) -> ValueApplied),
}

/// What an option's value did: `Err(())` for a value the option does not
/// take (refused as an unknown option), else what applying it gave.
type ValueApplied = Result<Result<(), CliError>, ()>;

/// Put `value` in `slot`: what most options do.
fn set<T>(slot: &mut T, value: T) -> Result<(), CliError> {
    *slot = value;
    Ok(())
}

/// The `-o` options nzfs knows: what each does, and the suggestions for a
/// misspelt one.
const MOUNT_OPTIONS: &[(&str, Apply)] = &[
    ("allow_other", Apply::Flag(|p, _| set(&mut p.access, Access::All))),
    (
        "allow_root",
        Apply::Flag(|p, _| set(&mut p.access, Access::RootAndOwner)),
    ),
    ("auto_unmount", Apply::Flag(|p, _| set(&mut p.auto_unmount, true))),
    (
        "default_permissions",
        Apply::Flag(|p, _| set(&mut p.default_permissions, true)),
    ),
    ("follow_symlinks", Apply::Flag(|_, s| set(&mut s.follow_symlinks, true))),
    ("nonempty", Apply::Flag(|p, _| set(&mut p.nonempty, true))),
    ("ro", Apply::Flag(|_, _| Ok(()))),
    ("rw", Apply::Flag(|p, _| set(&mut p.writable, true))),
    ("noexec", Apply::Flag(|p, _| set(&mut p.noexec, true))),
    ("noatime", Apply::Flag(|p, _| set(&mut p.noatime, true))),
    ("fsname", Apply::Value(|p, v| Ok(set(&mut p.fsname, v.into())))),
    ("subtype", Apply::Value(|p, v| Ok(set(&mut p.subtype, v.into())))),
    (
        "uid",
        Apply::Value(|p, v| Ok(parse_id("uid", v, 10).and_then(|id| set(&mut p.ownership.uid, Some(id))))),
    ),
    (
        "gid",
        Apply::Value(|p, v| Ok(parse_id("gid", v, 10).and_then(|id| set(&mut p.ownership.gid, Some(id))))),
    ),
    (
        "umask",
        Apply::Value(|p, v| {
            Ok(parse_id("umask", v, 8).and_then(|m| match m > 0o777 {
                true => fail(format!("-o umask={v}: not an octal umask like 022")),
                false => set(&mut p.ownership.umask, Some(m)),
            }))
        }),
    ),
    // The one kernel option worth passing on as it is.
    (
        "max_read",
        Apply::Value(|p, v| v.parse().map(|n| set(&mut p.max_read, Some(n))).map_err(|_| ())),
    ),
];

/// "unknown mount option", with the known option nearest to `o` when one is
/// near enough to be a misspelling.
fn unknown_mount_option(o: &str) -> CliError {
    let key = o.split_once('=').map_or(o, |(k, _)| k);
    // How each is written: `uid=` for one that takes a value.
    let known: Vec<String> = MOUNT_OPTIONS
        .iter()
        .map(|(name, apply)| match apply {
            Apply::Flag(_) => name.to_string(),
            Apply::Value(_) => format!("{name}="),
        })
        .collect();
    let near = known
        .iter()
        .map(|k| (strsim::levenshtein(key, k.trim_end_matches('=')), k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, k)| *d <= 2.max(k.len() / 4));
    CliError::new(match near {
        Some((_, k)) => format!("unknown mount option `{o}`; did you mean `{k}`? (nzfs mount --help lists them)"),
        None => format!(
            "unknown mount option `{o}`; nzfs knows {} (and ignores mount(8)'s generic ones)",
            known.join(", ")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(o: &str) -> Result<(MountPlan, StoreArgs), String> {
        let mut args = StoreArgs::default();
        mount_options(&[o.to_string()], Path::new("/data/x.zarr"), &mut args)
            .map(|p| (p, args))
            .map_err(|e| e.message)
    }

    /// Each option nzfs knows does what mount.fuse3 and nzfs's docs say,
    /// from the one table; a value where none is taken, or none where one
    /// is, is refused as unknown with the nearest.
    #[test]
    fn every_known_option_applies_and_misuse_is_refused() {
        let (p, s) = plan("ro,allow_other,auto_unmount,follow_symlinks,nonempty,noexec,noatime").unwrap();
        assert_eq!(p.access, Access::All);
        assert!(p.auto_unmount && p.nonempty && p.noexec && p.noatime && s.follow_symlinks);
        assert!(p.default_permissions, "other users are always checked by the kernel");
        assert_eq!(plan("allow_root").unwrap().0.access, Access::RootAndOwner);
        let (p, _) = plan("fsname=a,subtype=b,uid=7,gid=8,umask=027,max_read=4096").unwrap();
        assert_eq!((p.fsname.as_str(), p.subtype.as_str()), ("a", "b"));
        assert_eq!(
            (p.ownership.uid, p.ownership.gid, p.ownership.umask),
            (Some(7), Some(8), Some(0o27))
        );
        assert_eq!(p.max_read, Some(4096));
        assert!(plan("defaults,noauto,_netdev").is_ok());
        assert!(plan("rw").unwrap().0.writable && !plan("ro").unwrap().0.writable);
        assert!(plan("umask=1000").unwrap_err().contains("not an octal umask"));
        assert!(plan("uid=abc").is_err());
        for bad in ["max_read=lots", "ro=1", "uid", "alow_other"] {
            let e = plan(bad).unwrap_err();
            assert!(e.contains(&format!("unknown mount option `{bad}`")), "{bad}: {e}");
        }
        assert!(plan("uids=1").unwrap_err().contains("did you mean `uid=`"));
        assert!(plan("frobnicate").unwrap_err().contains("allow_other, allow_root"));
    }
}
