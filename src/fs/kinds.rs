//! The table of file kinds: every named file a directory of the mount may
//! hold (`header.cdl`, a group's `.nc` and `.ome.tif`, an array's
//! `data.bin`, `data.tif`, `data.txt` and `preview.png`, the root's
//! `index.html`) is one [`FileView`], and [`TABLE`] lists them.
//!
//! `lookup`, `readdir`, `getattr`, `read`, the follow-the-store rules,
//! drop-behind and the kernel's invalidation all go through the table; no
//! other code asks which kind a file is. Adding a file kind is one
//! `impl FileView` beside the code that renders it, and one line here.
//! A chunk file, of which an array has many, and a directory are the two
//! inodes that are not in the table.
//!
//! Invariants: each kind's tag is one bit above every node number
//! ([`crate::zarr::hierarchy::MAX_NODES`] < 2^22) and the generation of
//! the node's files above it (bits 22 to 53), and below the chunk files'
//! bit, and no two kinds share one, so an inode number names its kind,
//! node and generation alone; the table's order is the listing's order; a
//! kind's name never parses as a chunk file's name (those are digits).

use super::view::FileView;
use super::{Inode, NzFs};

/// One line of the table: the kind's inode tag and its view.
struct Entry {
    tag: u64,
    view: &'static dyn FileView,
}

/// Every kind of named file, in the order a listing gives them.
static TABLE: [Entry; 8] = [
    Entry {
        tag: 1 << 62,
        view: &super::views::Header,
    },
    Entry {
        tag: 1 << 60,
        view: &super::views::NetCdf,
    },
    Entry {
        tag: 1 << 55,
        view: &super::tiff::OmeTiffFile,
    },
    Entry {
        tag: 1 << 61,
        view: &super::read::DataBin,
    },
    Entry {
        tag: 1 << 56,
        view: &super::tiff::DataTif,
    },
    Entry {
        tag: 1 << 59,
        view: &super::text::DataTxt,
    },
    Entry {
        tag: 1 << 58,
        view: &super::previews::PreviewPng,
    },
    Entry {
        tag: 1 << 57,
        view: &super::previews::IndexHtml,
    },
];

/// A kind of named file: a line of `TABLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind(u8);

impl FileKind {
    /// `header.cdl`, which every directory holds.
    pub const HEADER: FileKind = FileKind(0);

    /// Every kind, in listing order.
    pub fn all() -> impl Iterator<Item = FileKind> {
        (0..TABLE.len() as u8).map(FileKind)
    }

    pub(super) fn view(self) -> &'static dyn FileView {
        TABLE[self.0 as usize].view
    }

    /// Its bit in the inode numbers of its files.
    pub(super) fn tag(self) -> u64 {
        TABLE[self.0 as usize].tag
    }

    /// The kind whose tag inode number `ino` carries, the node below, and
    /// the generation of the node's files between them
    /// ([`super::FILE_GEN_SHIFT`]).
    pub(super) fn of_ino(ino: u64) -> Option<(FileKind, usize, u32)> {
        Self::all().find(|k| ino & k.tag() != 0).map(|k| {
            let rest = ino & !k.tag();
            let node = rest & ((1 << super::FILE_GEN_SHIFT) - 1);
            (k, node as usize, (rest >> super::FILE_GEN_SHIFT) as u32)
        })
    }
}

impl NzFs {
    /// Every file whose bytes show chunk `chunk` of array `node`: its chunk
    /// file, and each named file of the array or a node above it whose
    /// kind says it shows the array's values (`FileView::shows_values_of`:
    /// `data.bin`, `data.txt`, `data.tif`, `preview.png`, the `.nc` and
    /// `.ome.tif` of each group above, `index.html`). Some may not exist (a
    /// 1-D array has no `data.tif`): the kernel knows no such inode, and
    /// dropping its pages is nothing.
    pub fn views_of_chunk(&self, node: usize, chunk: u64) -> Vec<u64> {
        let mut out = vec![Inode::Chunk { node, index: chunk }.to_ino()];
        let nodes = &self.hierarchy().nodes;
        let mut at = nodes.get(node).map(|_| node);
        while let Some(n) = at {
            out.extend(
                FileKind::all()
                    .filter(|k| k.view().shows_values_of(self, n, node))
                    .map(|k| self.ino(Inode::File(k, n))),
            );
            at = nodes[n].parent;
        }
        out
    }

    /// The inode numbers of the first `most` chunk files of array `n`
    /// (none for a group).
    pub fn chunk_inodes(&self, n: usize, most: u64) -> impl Iterator<Item = u64> + use<> {
        let count = self
            .info
            .get(n)
            .and_then(|i| i.chunk_names.as_ref())
            .map_or(0, |c| c.count());
        (0..count.min(most)).map(move |index| Inode::Chunk { node: n, index }.to_ino())
    }

    /// The names of the named files node `n`'s directory holds (none for
    /// a node this filesystem does not have).
    pub fn file_names(&self, n: usize) -> Vec<String> {
        if n >= self.info.len() {
            return Vec::new();
        }
        FileKind::all()
            .filter_map(|k| k.view().name(self, n).map(str::to_string))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::STAGED_INO as SPOOL_INO;

    /// Tags are single bits, all different, clear of node numbers,
    /// generations, the spool's bit (a writable mount's staged files) and
    /// the chunk files' bit: an inode number names one kind and one node.
    #[test]
    fn every_kind_has_its_own_bit() {
        let mut seen = 0u64;
        for k in FileKind::all() {
            let t = k.tag();
            assert_eq!(t.count_ones(), 1, "{k:?}");
            assert_eq!(seen & t, 0, "{k:?} shares its bit");
            // Above the spool's bit (a writable mount's staged files),
            // which is above every node number and generation.
            assert!(t > SPOOL_INO && t < super::super::CHUNK, "{k:?}");
            seen |= t;
            for n in [0usize, 1, 77, crate::zarr::hierarchy::MAX_NODES - 1] {
                assert_eq!(FileKind::of_ino(t | n as u64), Some((k, n, 0)));
                let newer = t | (u32::MAX as u64) << super::super::FILE_GEN_SHIFT | n as u64;
                assert_eq!(FileKind::of_ino(newer), Some((k, n, u32::MAX)));
                assert!(newer < super::super::CHUNK && newer & !t < SPOOL_INO);
            }
        }
        assert_eq!(FileKind::of_ino(1), None);
        assert_eq!(seen & SPOOL_INO, 0);
        assert_eq!(FileKind::of_ino(SPOOL_INO | 5), None, "a staged file is no view");
    }
}
