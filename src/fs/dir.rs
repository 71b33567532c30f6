//! Directories of the mounted layout: lookup, open and listing. Listings
//! are generated on demand from the hierarchy and the chunk grid, so a
//! million-chunk array costs nothing to list beyond the names returned.

use std::ffi::OsStr;

use super::names::ChunkNames;
use super::{Attr, DirEntry, FileKind, FsError, HEADER_NAME, Inode, Kind, NzFs};

impl NzFs {
    /// Look `name` up in directory `parent`.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let Ok(Inode::Node(p)) = self.inode(parent) else {
            return Err(FsError::NotADirectory);
        };
        let name = name.to_str().ok_or(FsError::NotFound)?;
        let header = Inode::File(FileKind::HEADER, p);
        if name == HEADER_NAME && self.unknown_type(p).is_some() {
            return self.getattr(self.ino(header));
        }
        self.node_dir(p)?;
        for kind in FileKind::all() {
            let view = kind.view();
            if view.fixed_name().is_none_or(|f| f == name) && view.name(self, p) == Some(name) {
                return self.getattr(self.ino(Inode::File(kind, p)));
            }
        }
        if let Some(names) = &self.info[p].chunk_names {
            let index = names.parse(name).ok_or(FsError::NotFound)?;
            return self.getattr(Inode::Chunk { node: p, index }.to_ino());
        }
        let by_name = &self.info[p].by_name;
        let child = by_name
            .binary_search_by(|&c| self.info[c as usize].dir_name.as_str().cmp(name))
            .map(|at| by_name[at] as usize)
            .map_err(|_| FsError::NotFound)?;
        self.getattr(Inode::Node(child).to_ino())
    }

    /// Check that `ino` is a directory that can be listed.
    pub fn opendir(&self, ino: u64) -> Result<(), FsError> {
        match self.inode(ino).ok() {
            Some(Inode::Node(n)) if self.unknown_type(n).is_some() => Ok(()),
            Some(Inode::Node(n)) => self.node_dir(n).map(|_| ()),
            Some(_) => Err(FsError::NotADirectory),
            None => Err(FsError::NotFound),
        }
    }

    /// Up to `max` entries of directory `ino`, starting at `offset`. Entries
    /// are generated on demand, so listing a huge array costs no memory.
    pub fn readdir(&self, ino: u64, offset: u64, max: usize) -> Result<Vec<DirEntry>, FsError> {
        let Ok(Inode::Node(n)) = self.inode(ino) else {
            return Err(FsError::NotADirectory);
        };
        if self.unknown_type(n).is_some() {
            let node = &self.hierarchy().nodes[n];
            let parent = node.parent.map_or(ino, |p| Inode::Node(p).to_ino());
            let entries = [
                (ino, Kind::Directory, "."),
                (parent, Kind::Directory, ".."),
                (self.ino(Inode::File(FileKind::HEADER, n)), Kind::File, HEADER_NAME),
            ];
            return Ok(entries
                .into_iter()
                .enumerate()
                .skip(offset as usize)
                .take(max)
                .map(|(k, (ino, kind, name))| DirEntry {
                    ino,
                    next_offset: k as u64 + 1,
                    kind,
                    name: name.to_string(),
                })
                .collect());
        }
        let node = self.node_dir(n)?;
        let parent_ino = node.parent.map_or(ino, |p| Inode::Node(p).to_ino());
        // ".", "..", the named files in the table's order (header.cdl,
        // then a group's .nc and .ome.tif, an array's data.bin, data.tif,
        // data.txt and preview.png, the root's index.html), then the
        // chunks or the children.
        let files: Vec<(u64, String)> = FileKind::all()
            .filter_map(|k| Some((self.ino(Inode::File(k, n)), k.view().name(self, n)?.to_string())))
            .collect();
        let fixed = 2 + files.len() as u64;
        let total = fixed
            + self.info[n]
                .chunk_names
                .as_ref()
                .map_or(node.children.len() as u64, ChunkNames::count);
        let mut out = Vec::new();
        let mut k = offset;
        while k < total && out.len() < max {
            let (ino, kind, name) = match k {
                0 => (ino, Kind::Directory, ".".to_string()),
                1 => (parent_ino, Kind::Directory, "..".to_string()),
                k if k < fixed => {
                    let (ino, name) = files[(k - 2) as usize].clone();
                    (ino, Kind::File, name)
                }
                _ => match &self.info[n].chunk_names {
                    Some(names) => {
                        let index = k - fixed;
                        (Inode::Chunk { node: n, index }.to_ino(), Kind::File, names.name(index))
                    }
                    None => {
                        let c = node.children[(k - fixed) as usize];
                        (Inode::Node(c).to_ino(), Kind::Directory, self.info[c].dir_name.clone())
                    }
                },
            };
            k += 1;
            out.push(DirEntry {
                ino,
                next_offset: k,
                kind,
                name,
            });
        }
        Ok(out)
    }
}
