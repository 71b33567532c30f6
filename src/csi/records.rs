//! What this plugin published: one small file per target path in the state
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

/// One publish: the volume, the target, and whether the publish created
/// the target directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub volume_id: String,
    pub target: PathBuf,
    pub created: bool,
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
        let mut volume_id = None;
        let mut path = None;
        let mut created = false;
        for line in text.lines() {
            match line.split_once('=') {
                Some(("volume", v)) => volume_id = Some(v.to_string()),
                Some(("target", v)) => path = Some(PathBuf::from(v)),
                Some(("created", v)) => created = v == "yes",
                _ => {}
            }
        }
        let record = Record {
            volume_id: volume_id?,
            target: path?,
            created,
        };
        (record.target == target).then_some(record)
    }

    /// Note a publish.
    pub fn put(&self, r: &Record) -> std::io::Result<()> {
        let target = r.target.to_str().filter(|t| !t.contains('\n')).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a target path that is not one line of UTF-8",
            )
        })?;
        let volume: String = r.volume_id.chars().filter(|c| !c.is_control()).collect();
        std::fs::create_dir_all(&self.dir)?;
        let file = self.file(&r.target);
        let tmp = file.with_extension("tmp");
        let created = if r.created { "yes" } else { "no" };
        std::fs::write(&tmp, format!("volume={volume}\ntarget={target}\ncreated={created}\n"))?;
        std::fs::rename(&tmp, &file)
    }

    /// Forget the publish at `target`.
    pub fn remove(&self, target: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(self.file(target)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
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
        };
        records.put(&r).unwrap();
        assert_eq!(records.get(t), Some(r.clone()));
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
