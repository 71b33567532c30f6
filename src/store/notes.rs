//! Notes for the person mounting: what opening a store found that they
//! should hear at once, not only in the log (say, references a reference
//! set cannot read without an option). Opening code adds them; the mount
//! daemon hands them to `nzfs mount`, which prints them under its
//! "mounted" line.
//!
//! Invariants: at most [`MAX_NOTES`] are kept (later ones are dropped: the
//! log has them all); a note is one line.

use std::sync::Mutex;

/// The most notes kept.
pub const MAX_NOTES: usize = 16;

static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Add a note (its line breaks become spaces).
pub fn add(note: impl Into<String>) {
    let note: String = note.into().replace(['\n', '\r'], " ");
    let mut notes = crate::sync::lock(&NOTES);
    if notes.len() < MAX_NOTES {
        notes.push(note);
    }
}

/// Every note so far, leaving none.
pub fn take() -> Vec<String> {
    std::mem::take(&mut *crate::sync::lock(&NOTES))
}
