//! The write path's errors as the filesystem's: each error of the spool,
//! of a name and of a commit becomes one [`FsError`], by an exhaustive
//! match, so that its errno is decided where every other one is
//! ([`FsError::errno`]).

use std::sync::Arc;

use crate::fs::FsError;
use crate::write::WriteError;
use crate::write::names::NameError;
use crate::write::spool::SpoolError;

impl From<SpoolError> for FsError {
    fn from(e: SpoolError) -> FsError {
        match e {
            SpoolError::NotFound => FsError::NotFound,
            SpoolError::NotEmpty(_) => FsError::NotEmpty {
                what: e.to_string(),
                at_tip: false,
            },
            SpoolError::Full { .. } => FsError::NoSpace(e.to_string()),
            SpoolError::Size { .. } => FsError::TooBig(e.to_string()),
            SpoolError::Commit(e) => e.into(),
            SpoolError::Io(e) => FsError::Disk(Arc::new(e)),
        }
    }
}

impl From<WriteError> for FsError {
    fn from(e: WriteError) -> FsError {
        let not_committed =
            |e: &WriteError| FsError::NotCommitted(format!("not committed; the branch is as it was: {e}"));
        match e {
            WriteError::Exists(path) => FsError::Exists(path),
            WriteError::NotEmpty(..) => FsError::NotEmpty {
                what: format!("not committed; the branch is as it was: {e}"),
                at_tip: true,
            },
            WriteError::Store(e) => FsError::Store(Arc::new(e)),
            WriteError::Convert(_) | WriteError::Conflict(_) | WriteError::Refused(_) => not_committed(&e),
        }
    }
}

impl From<NameError> for FsError {
    fn from(e: NameError) -> FsError {
        match e {
            NameError::NotANode(..)
            | NameError::NotAGroup(..)
            | NameError::NotTaken(_)
            | NameError::FileName(_)
            | NameError::NotUtf8 => FsError::Invalid(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::names::file_name;

    /// Each write error has the errno a program expects of it.
    #[test]
    fn write_errors_have_the_errnos_programs_expect() {
        let name: FsError = file_name("..nc").unwrap_err().into();
        assert_eq!(name.errno(), libc::EINVAL);
        assert!(name.to_string().contains("cannot name"), "{name}");
        let full = SpoolError::Full {
            limit: 1,
            wanted: 2,
            kept: 0,
            dir: "/spool".into(),
        };
        assert_eq!(FsError::from(full).errno(), libc::ENOSPC);
        assert_eq!(
            FsError::from(SpoolError::Size { size: 4, wanted: 8 }).errno(),
            libc::EFBIG
        );
        assert_eq!(FsError::from(SpoolError::NotFound).errno(), libc::ENOENT);
        let disk = SpoolError::Io(std::io::Error::from_raw_os_error(libc::EDQUOT));
        assert_eq!(FsError::from(disk).errno(), libc::EDQUOT);
        assert_eq!(FsError::from(WriteError::Exists("g".into())).errno(), libc::EEXIST);
        let not_empty = FsError::from(WriteError::NotEmpty("g".into(), "g/a".into()));
        assert_eq!(not_empty.errno(), libc::ENOTEMPTY);
        assert!(
            !not_empty.is_expected() && not_empty.to_string().contains("g/a"),
            "{not_empty}"
        );
        let conflict = FsError::from(SpoolError::Commit(WriteError::Conflict("x changed".into())));
        assert_eq!(conflict.errno(), libc::EIO);
        assert!(conflict.to_string().contains("x changed"), "{conflict}");
        let denied = WriteError::Store(crate::store::StoreError::Denied("no".into()));
        assert_eq!(FsError::from(denied).errno(), libc::EACCES);
    }
}
