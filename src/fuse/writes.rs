//! The two ioctls of a writable mount's root that `nzfs commit` and `nzfs
//! discard` send ([`COMMIT_IOCTL`], [`DISCARD_IOCTL`]): decoded here, the
//! decision the mount core's, the answer lines of text.
//!
//! Invariant: an answer never exceeds the room the ioctl's number gives.

use crate::fs::FsError;
use crate::fs::status::{COMMIT_IOCTL, DISCARD_IOCTL};
use crate::mount::{Asker, Mount};

/// The answer to ioctl `cmd` of the root, where it is one of these two
/// (`None`: another): the bytes, or what failed and why.
pub(super) fn ioctl(
    mount: &Mount,
    who: Asker,
    cmd: u32,
    in_data: &[u8],
    room: usize,
) -> Option<Result<Vec<u8>, (&'static str, FsError)>> {
    if cmd == COMMIT_IOCTL {
        let message = in_data.split(|&b| b == 0).next().unwrap_or_default();
        let message = String::from_utf8_lossy(message);
        return Some(
            mount
                .commit_held(&message, who)
                .map(|made| match made {
                    None => Vec::new(),
                    Some((id, files)) => lines(&id, &files, room),
                })
                .map_err(|e| ("commit", e)),
        );
    }
    if cmd == DISCARD_IOCTL {
        return Some(
            mount
                .discard_held(who)
                .map(|dropped| lines(&dropped.len().to_string(), &dropped, room))
                .map_err(|e| ("discard", e)),
        );
    }
    None
}

/// `first`, then each of `rest`, a line each, as many as `room` holds.
fn lines(first: &str, rest: &[String], room: usize) -> Vec<u8> {
    let mut out = format!("{first}\n").into_bytes();
    for f in rest {
        if out.len() + f.len() + 1 > room {
            break;
        }
        out.extend_from_slice(f.as_bytes());
        out.push(b'\n');
    }
    out.truncate(room);
    out
}
