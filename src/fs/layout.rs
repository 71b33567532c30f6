//! The inode-number layout, in one place. Every number the mount gives
//! is told apart by its bits alone, in ranges that never overlap:
//!
//! | bits   | what |
//! |--------|------|
//! | 63     | a chunk file: `CHUNK \| node << 40 \| chunk index` |
//! | 55–62  | a named file's kind: its index in the table of kinds, plus 1 (`kinds.rs`) |
//! | 54     | a writable mount's staged file: `STAGED_INO \| n` (`write::spool`) |
//! | 22–53  | a named file's generation (`renew.rs`) |
//! | 0–21   | a named file's node; a directory is its node plus 1 |
//!
//! Invariants: the ranges do not overlap (the test below checks each
//! against the others); the kind field holds 255 kinds, and a number whose
//! field names no kind is no named file's.

use super::FileKind;

/// A chunk file's bit.
pub(super) const CHUNK: u64 = 1 << 63;
/// A chunk file's chunk index takes the bits below this.
pub(super) const CHUNK_BITS: u32 = 40;
/// A named file's kind field starts at this bit.
pub(super) const KIND_SHIFT: u32 = 55;
/// The kind field's width.
pub(super) const KIND_BITS: u32 = 8;
/// The bit a writable mount's staged files' inode numbers carry: above
/// every node number and generation, below every kind.
pub const STAGED_INO: u64 = 1 << 54;
/// A named file's inode number carries, from this bit up, the generation
/// of its node's files ([`super::NzFs::ino`]).
pub(super) const FILE_GEN_SHIFT: u32 = 22;

// The fixed ranges, checked as the code is compiled: a node number below
// every generation, a 32-bit generation below the staged files' bit, that
// bit below the kind field, the field below the chunk files' bit.
const _: () = assert!(crate::zarr::hierarchy::MAX_NODES as u64 <= 1 << FILE_GEN_SHIFT);
const _: () = assert!(1 << (FILE_GEN_SHIFT + 32) <= STAGED_INO && STAGED_INO < 1 << KIND_SHIFT);
const _: () = assert!(KIND_SHIFT + KIND_BITS <= 63 && CHUNK == 1 << 63);

/// What an inode number stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inode {
    /// The directory of group or array `n`.
    Node(usize),
    /// A named file of node `n`'s directory, of a kind in the table
    /// (`kinds`).
    File(FileKind, usize),
    /// A chunk file of array `node`.
    Chunk {
        /// The array.
        node: usize,
        /// The chunk's linear index in the chunk grid (C order).
        index: u64,
    },
}

impl Inode {
    /// The node the inode shows, or one of whose files it is.
    pub fn node(self) -> usize {
        match self {
            Inode::Node(n) | Inode::File(_, n) => n,
            Inode::Chunk { node, .. } => node,
        }
    }

    /// Its inode number: the kind in the high bits, the node (and chunk)
    /// below.
    pub fn to_ino(self) -> u64 {
        match self {
            Inode::Node(n) => n as u64 + 1,
            Inode::File(kind, n) => kind.tag() | n as u64,
            Inode::Chunk { node, index } => CHUNK | (node as u64) << CHUNK_BITS | index,
        }
    }

    /// What an inode number stands for, and the generation of a named
    /// file's node it carries (0 for other inodes); `None` for one nzfs
    /// never gives. [`NzFs::inode`](super::NzFs::inode) checks the generation.
    pub fn from_ino(ino: u64) -> Option<(Inode, u32)> {
        if ino & CHUNK != 0 {
            let rest = ino & !CHUNK;
            return Some((
                Inode::Chunk {
                    node: (rest >> CHUNK_BITS) as usize,
                    index: rest & ((1 << CHUNK_BITS) - 1),
                },
                0,
            ));
        }
        match FileKind::of_ino(ino) {
            Some((kind, n, generation)) => Some((Inode::File(kind, n), generation)),
            None => (ino as usize).checked_sub(1).map(|n| (Inode::Node(n), 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zarr::hierarchy::MAX_NODES;

    /// Each range is its own: every kind's numbers, with any node and any
    /// generation, read back as that kind, node and generation, and are no
    /// directory's, staged file's or chunk file's; the staged files' and
    /// the chunk files' are no named file's.
    #[test]
    fn every_range_is_its_own() {
        let kinds: Vec<FileKind> = FileKind::all().collect();
        assert!(kinds.len() < (1 << KIND_BITS), "the kind field holds every kind");
        let mut fields = std::collections::HashSet::new();
        for &k in &kinds {
            let field = k.tag();
            assert!(fields.insert(field), "{k:?} shares its field");
            assert_eq!(field & !(((1 << KIND_BITS) - 1) << KIND_SHIFT), 0, "{k:?}");
            for n in [0usize, 1, 77, MAX_NODES - 1] {
                for g in [0u32, 1, u32::MAX] {
                    let ino = field | u64::from(g) << FILE_GEN_SHIFT | n as u64;
                    assert_eq!(Inode::from_ino(ino), Some((Inode::File(k, n), g)), "{k:?} {n} {g}");
                    assert_eq!(ino & (CHUNK | STAGED_INO), 0, "{k:?} {n} {g}");
                }
            }
        }
        for n in [0usize, 1, MAX_NODES - 1] {
            let dir = Inode::Node(n).to_ino();
            assert_eq!(Inode::from_ino(dir), Some((Inode::Node(n), 0)));
            assert!(
                dir <= 1 << FILE_GEN_SHIFT,
                "a directory's number is below every generation"
            );
            let chunk = Inode::Chunk {
                node: n,
                index: (1 << CHUNK_BITS) - 1,
            };
            assert_eq!(Inode::from_ino(chunk.to_ino()), Some((chunk, 0)));
        }
        assert_eq!(FileKind::of_ino(STAGED_INO | 5), None, "a staged file is no view");
        assert_eq!(FileKind::of_ino(1), None);
        let unknown = (kinds.len() as u64 + 1) << KIND_SHIFT;
        assert_eq!(FileKind::of_ino(unknown | 3), None, "a field that names no kind");
    }
}
