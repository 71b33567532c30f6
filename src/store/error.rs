//! The one error of the store boundary: every [`super::ReadableStore`]
//! method fails with a [`StoreError`], whose variant says what the failure
//! means to a reader, and [`StoreError::errno`] decides its errno for every
//! variant. An OS or network error becomes one in exactly one place, the
//! `From<io::Error>` conversion here; the stores make the others by name.
//!
//! Invariants: the message of every variant names the object (its key or
//! URL, credentials redacted by the store that made it) and says what
//! happened, on one line; the errno match has no wildcard arm.

use std::fmt;
use std::io;

/// A store failure (module doc).
#[derive(Debug)]
pub enum StoreError {
    /// The object, or a directory on its path, is gone (one that was
    /// listed, or that a reference names).
    NotFound(String),
    /// The store refuses the reader (file modes, bucket policy, 403).
    Denied(String),
    /// The store did not answer in time, after its retries.
    TimedOut(String),
    /// The object is not the version it was stamped with: it was replaced
    /// or rewritten since.
    Changed(String),
    /// The object is larger than the most its reader asked for.
    TooLarge {
        /// The object's length, or the bytes sent before the limit was
        /// passed.
        len: u64,
        /// The most bytes allowed.
        max_len: u64,
    },
    /// The object exists but cannot be what it claims: a special file, a
    /// link out of the store, a value shorter than its range, a reference
    /// or archive entry that cannot be followed.
    Corrupt(String),
    /// Any other failure of the OS or the network.
    Io(io::Error),
}

/// What a store method returns.
pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// The errno a reader gets for it: decided here, for every variant.
    pub fn errno(&self) -> i32 {
        match self {
            // A key that vanished under a read is a broken read, not an
            // absent file: the file was listed. A store that did not answer
            // in time is EIO too, the error every reader handles; the log
            // line says it timed out.
            StoreError::NotFound(_)
            | StoreError::TimedOut(_)
            | StoreError::Changed(_)
            | StoreError::TooLarge { .. }
            | StoreError::Corrupt(_)
            | StoreError::Io(_) => libc::EIO,
            StoreError::Denied(_) => libc::EACCES,
        }
    }

    /// A short name of the kind of failure, for counts and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::NotFound(_) => "not_found",
            StoreError::Denied(_) => "denied",
            StoreError::TimedOut(_) => "timed_out",
            StoreError::Changed(_) => "changed",
            StoreError::TooLarge { .. } => "too_large",
            StoreError::Corrupt(_) => "corrupt",
            StoreError::Io(_) => "io",
        }
    }

    /// The OS error number of an OS failure not named by a variant.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            StoreError::Io(e) => e.raw_os_error(),
            _ => None,
        }
    }

    /// Whether the object (or a directory on its path) is gone.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound(_))
    }

    /// Any other failure, as a message (a request the remote store
    /// refused, past its retries).
    pub fn failed(message: impl Into<String>) -> StoreError {
        StoreError::Io(io::Error::other(message.into()))
    }

    /// The same failure again, for each of several requests it failed
    /// (an OS error's kind and message; `io::Error` cannot be cloned).
    pub fn duplicate(&self) -> StoreError {
        match self {
            StoreError::NotFound(m) => StoreError::NotFound(m.clone()),
            StoreError::Denied(m) => StoreError::Denied(m.clone()),
            StoreError::TimedOut(m) => StoreError::TimedOut(m.clone()),
            StoreError::Changed(m) => StoreError::Changed(m.clone()),
            StoreError::Corrupt(m) => StoreError::Corrupt(m.clone()),
            StoreError::TooLarge { len, max_len } => StoreError::TooLarge {
                len: *len,
                max_len: *max_len,
            },
            StoreError::Io(e) => StoreError::Io(io::Error::new(e.kind(), e.to_string())),
        }
    }

    /// The same failure, its message led by `what` (a key, a URL).
    pub fn context(self, what: impl fmt::Display) -> StoreError {
        match self {
            StoreError::NotFound(m) => StoreError::NotFound(format!("{what}: {m}")),
            StoreError::Denied(m) => StoreError::Denied(format!("{what}: {m}")),
            StoreError::TimedOut(m) => StoreError::TimedOut(format!("{what}: {m}")),
            StoreError::Changed(m) => StoreError::Changed(format!("{what}: {m}")),
            StoreError::Corrupt(m) => StoreError::Corrupt(format!("{what}: {m}")),
            StoreError::Io(e) => StoreError::Io(io::Error::new(e.kind(), format!("{what}: {e}"))),
            e @ StoreError::TooLarge { .. } => e,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound(m)
            | StoreError::Denied(m)
            | StoreError::TimedOut(m)
            | StoreError::Changed(m)
            | StoreError::Corrupt(m) => f.write_str(m),
            StoreError::TooLarge { len, max_len } => {
                write!(f, "object of {len} bytes exceeds the {max_len}-byte limit")
            }
            StoreError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io(e) => e.source(),
            _ => None,
        }
    }
}

/// The one conversion of an OS error into a store error. `io::ErrorKind` is
/// `#[non_exhaustive]`, so this match ends in a catch-all: a kind not
/// named is [`StoreError::Io`].
impl From<io::Error> for StoreError {
    fn from(e: io::Error) -> StoreError {
        if let Some(too) = e.get_ref().and_then(|inner| inner.downcast_ref::<StoreError>())
            && let StoreError::TooLarge { len, max_len } = too
        {
            return StoreError::TooLarge {
                len: *len,
                max_len: *max_len,
            };
        }
        match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => StoreError::NotFound(e.to_string()),
            io::ErrorKind::PermissionDenied => StoreError::Denied(e.to_string()),
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => StoreError::TimedOut(e.to_string()),
            io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData => StoreError::Corrupt(e.to_string()),
            _ => StoreError::Io(e),
        }
    }
}

/// An OS error as the `rustix` calls of the local store give it.
impl From<rustix::io::Errno> for StoreError {
    fn from(e: rustix::io::Errno) -> StoreError {
        StoreError::from(io::Error::from(e))
    }
}

/// For the callers above the store that speak `io::Error` (the metadata
/// walk, the openers): the kind follows the variant, and a
/// [`StoreError::TooLarge`] stays inside, so that it is still known
/// ([`super::is_too_large`]).
impl From<StoreError> for io::Error {
    fn from(e: StoreError) -> io::Error {
        let kind = match &e {
            StoreError::NotFound(_) => io::ErrorKind::NotFound,
            StoreError::Denied(_) => io::ErrorKind::PermissionDenied,
            StoreError::TimedOut(_) => io::ErrorKind::TimedOut,
            StoreError::Changed(_) | StoreError::Corrupt(_) | StoreError::TooLarge { .. } => io::ErrorKind::InvalidData,
            StoreError::Io(e) => e.kind(),
        };
        match e {
            StoreError::Io(e) => e,
            e @ StoreError::TooLarge { .. } => io::Error::new(kind, e),
            e => io::Error::new(kind, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_errno_and_survives_the_round_trip() {
        let e = |k| io::Error::new(k, "x");
        let cases = [
            (io::ErrorKind::NotFound, "not_found", libc::EIO),
            (io::ErrorKind::NotADirectory, "not_found", libc::EIO),
            (io::ErrorKind::PermissionDenied, "denied", libc::EACCES),
            (io::ErrorKind::TimedOut, "timed_out", libc::EIO),
            (io::ErrorKind::UnexpectedEof, "corrupt", libc::EIO),
            (io::ErrorKind::Other, "io", libc::EIO),
        ];
        for (kind, name, errno) in cases {
            let s = StoreError::from(e(kind));
            assert_eq!((s.kind(), s.errno()), (name, errno), "{kind:?}");
            // Above the store and back, it means the same.
            let back = StoreError::from(io::Error::from(s));
            assert_eq!(back.kind(), name, "{kind:?}");
        }
        let too = StoreError::TooLarge { len: 10, max_len: 4 };
        let through = io::Error::from(too);
        assert!(super::super::is_too_large(&through));
        assert!(matches!(
            StoreError::from(through),
            StoreError::TooLarge { len: 10, max_len: 4 }
        ));
        assert_eq!(
            StoreError::Changed("k changed".into()).context("s3://b").to_string(),
            "s3://b: k changed"
        );
    }
}
