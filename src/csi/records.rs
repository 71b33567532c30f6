//! What this plugin published and staged: one small file per target (or
//! staging) path in the state
//! directory (by default `published/` beside the plugin's socket, which
//! the DaemonSet keeps on the node), written after a publish succeeds and
//! removed after its unpublish. Unpublish acts only on what a record
//! names: it unmounts an nzfs mount this plugin made (by this or an
//! earlier plugin process), and removes the target directory only when
//! the publish created it.
//!
//! Invariants: a record's name is a hash of its normalised target path and
//! its content names that path, so a collision is detected, never acted
//! on; records are written whole (a temporary file renamed over); a record
//! that cannot be read or does not name its target counts as absent.

use std::path::{Path, PathBuf};

/// One publish (or staging): the volume, the target, whether the publish
/// created the target directory, and where the target is a bind mount of
/// the volume's staged mount, that staging path.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub volume_id: String,
    pub target: PathBuf,
    pub created: bool,
    pub staging: Option<PathBuf>,
}

/// The records of one plugin.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(dir: PathBuf) -> Records {
        Records { dir }
    }

    fn file(&self, target: &Path) -> PathBuf {
        // FNV-1a of the path's bytes: stable across builds and processes.
        let hash = target
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
        self.dir.join(format!("{hash:016x}"))
    }

    /// The record of `target`, if this plugin published it.
    pub fn get(&self, target: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(self.file(target)).ok()?;
        parse(&text).filter(|r| r.target == target)
    }

    /// Note a publish.
    pub fn put(&self, r: &Record) -> std::io::Result<()> {
        let line = |p: &Path| {
            p.to_str()
                .filter(|t| !t.contains('\n'))
                .map(str::to_string)
                .ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "a target path that is not one line of UTF-8",
                    )
                })
        };
        let target = line(&r.target)?;
        let staging = match &r.staging {
            Some(s) => format!("staging={}\n", line(s)?),
            None => String::new(),
        };
        let volume: String = r.volume_id.chars().filter(|c| !c.is_control()).collect();
        std::fs::create_dir_all(&self.dir)?;
        let file = self.file(&r.target);
        let tmp = file.with_extension("tmp");
        let created = if r.created { "yes" } else { "no" };
        std::fs::write(
            &tmp,
            format!("volume={volume}\ntarget={target}\ncreated={created}\n{staging}"),
        )?;
        std::fs::rename(&tmp, &file)
    }

    /// Every record: what this plugin (or an earlier plugin process)
    /// published and staged.
    pub fn all(&self) -> Vec<Record> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let r = parse(&std::fs::read_to_string(e.path()).ok()?)?;
                // Only a record in its target's file (as `get` reads it).
                (self.file(&r.target) == e.path()).then_some(r)
            })
            .collect()
    }

    /// Forget the publish at `target`.
    pub fn remove(&self, target: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(self.file(target)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// A record's text (`volume=`, `target=`, `created=`, `staging=` lines).
fn parse(text: &str) -> Option<Record> {
    let mut volume_id = None;
    let mut target = None;
    let mut created = false;
    let mut staging = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("volume", v)) => volume_id = Some(v.to_string()),
            Some(("target", v)) => target = Some(PathBuf::from(v)),
            Some(("created", v)) => created = v == "yes",
            Some(("staging", v)) => staging = Some(PathBuf::from(v)),
            _ => {}
        }
    }
    Some(Record {
        volume_id: volume_id?,
        target: target?,
        created,
        staging,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_name_their_target_and_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let records = Records::new(dir.path().join("published"));
        let t = Path::new("/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount");
        assert_eq!(records.get(t), None);
        let r = Record {
            volume_id: "vol-1".into(),
            target: t.into(),
            created: true,
            staging: None,
        };
        records.put(&r).unwrap();
        assert_eq!(records.get(t), Some(r.clone()));
        // A bind of a staged mount names its staging path.
        let bound = Record {
            target: "/var/lib/kubelet/pods/q/volumes/kubernetes.io~csi/v/mount".into(),
            staging: Some("/var/lib/kubelet/plugins/kubernetes.io/csi/nzfs/ab/globalmount".into()),
            ..r.clone()
        };
        records.put(&bound).unwrap();
        assert_eq!(records.get(&bound.target), Some(bound.clone()));
        let mut all = records.all();
        all.sort_by(|a, b| a.target.cmp(&b.target));
        assert_eq!(all, [r.clone(), bound.clone()]);
        records.remove(&bound.target).unwrap();
        assert_eq!(records.get(Path::new("/var/lib/kubelet/other")), None);
        // A record whose content names another target (a collision, or an
        // edit) is not this target's.
        std::fs::write(records.file(t), "volume=vol-1\ntarget=/elsewhere\ncreated=yes\n").unwrap();
        assert_eq!(records.get(t), None);
        records.put(&r).unwrap();
        records.remove(t).unwrap();
        records.remove(t).unwrap();
        assert_eq!(records.get(t), None);
    }
}
