//! The table of file kinds: every named file a directory of the mount may
//! hold (`header.cdl`, a group's `.nc` and `.ome.tif`, an array's
//! `data.bin`, `data.tif`, `data.txt` and `preview.png`, the root's
//! `index.html`) is one [`FileView`], and [`TABLE`] lists them.
//!
//! `lookup`, `readdir`, `getattr`, `read`, the names a node may not be
//! listed under, the follow-the-store rules,
//! drop-behind and the kernel's invalidation all go through the table; no
//! other code asks which kind a file is. Adding a file kind is one
//! `impl FileView` beside the code that renders it, and one line here.
//! A chunk file, of which an array has many, and a directory are the two
//! inodes that are not in the table.
//!
//! Invariants: a kind's inode numbers carry its index in the table, plus
//! one, in the kind field of the inode layout (`layout.rs`), so an inode
//! number names its kind, node and generation alone; the table's order is
//! the listing's order; a kind's name never parses as a chunk file's name
//! (those are digits).

use super::layout::{FILE_GEN_SHIFT, KIND_BITS, KIND_SHIFT};
use super::view::FileView;
use super::{Inode, NzFs};

/// One line of the table: the kind's view.
struct Entry {
    view: &'static dyn FileView,
}

/// Every kind of named file, in the order a listing gives them.
static TABLE: [Entry; 8] = [
    Entry {
        view: &super::views::Header,
    },
    Entry {
        view: &super::views::NetCdf,
    },
    Entry {
        view: &super::tiff::OmeTiffFile,
    },
    Entry {
        view: &super::read::DataBin,
    },
    Entry {
        view: &super::tiff::DataTif,
    },
    Entry {
        view: &super::text::DataTxt,
    },
    Entry {
        view: &super::previews::PreviewPng,
    },
    Entry {
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

    /// Its field in the inode numbers of its files: its index plus 1, at
    /// the layout's kind bits.
    pub(super) fn tag(self) -> u64 {
        (u64::from(self.0) + 1) << KIND_SHIFT
    }

    /// The kind whose field inode number `ino` (not a chunk file's)
    /// carries, the node below, and the generation of the node's files
    /// between them.
    pub(super) fn of_ino(ino: u64) -> Option<(FileKind, usize, u32)> {
        let field = (ino >> KIND_SHIFT) & ((1 << KIND_BITS) - 1);
        let index = usize::try_from(field.checked_sub(1)?)
            .ok()
            .filter(|&i| i < TABLE.len())?;
        let kind = FileKind(index as u8);
        let rest = ino & !(((1 << KIND_BITS) - 1) << KIND_SHIFT);
        let node = rest & ((1 << FILE_GEN_SHIFT) - 1);
        Some((kind, node as usize, (rest >> FILE_GEN_SHIFT) as u32))
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

    /// Whether node `dir`'s directory holds a named file called `name`:
    /// the table says (a kind of fixed name is asked only when `name` is
    /// it, so that no view's plan is made for a name that is not).
    pub(super) fn generated_in(&self, dir: usize, name: &str) -> bool {
        FileKind::all().any(|k| {
            let view = k.view();
            view.fixed_name().is_none_or(|fixed| fixed == name) && view.name(self, dir) == Some(name)
        })
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
