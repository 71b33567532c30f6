//! OCDBT's encoded forms, as tensorstore documents them
//! (`tensorstore/kvstore/ocdbt/index.rst`): the manifest (configuration
//! and inline versions), and B+tree nodes (leaf entries with inline or
//! out-of-line values, interior entries naming their children). Pure
//! functions of bytes, so that the fuzz target reaches every one.
//!
//! Invariants: every count, length and offset is checked against the
//! bytes left before anything is allocated from it; a decompressed body
//! is at most [`MAX_DECODED`] bytes; a CRC-32C that does not match, a
//! magic or version that is not OCDBT's, or bytes left over is an error
//! naming what was wrong; nothing here reads a store.

/// The most bytes one encoded manifest or node is read with.
pub const MAX_ENCODED: u64 = 16 << 20;
/// The most bytes one manifest or node decompresses to (tensorstore's
/// default `max_decoded_node_bytes` is 8 MiB).
pub const MAX_DECODED: u64 = 16 << 20;
/// The longest data file path (the format's own bound).
const MAX_PATH: usize = 65535;

const MANIFEST_MAGIC: u32 = 0x0cdb_3a2a;
const BTREE_MAGIC: u32 = 0x0cdb_20de;

/// Why OCDBT bytes do not decode.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    /// Too short for what it says it holds.
    #[error("truncated: {0}")]
    Truncated(&'static str),
    /// A field out of its range, or a check that fails.
    #[error("{0}")]
    Invalid(String),
}

fn invalid(why: impl Into<String>) -> FormatError {
    FormatError::Invalid(why.into())
}

/// A cursor over bytes, each read checked against what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], FormatError> {
        if n > self.left() {
            return Err(FormatError::Truncated(what));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, FormatError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32_le(&mut self, what: &'static str) -> Result<u32, FormatError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64_le(&mut self, what: &'static str) -> Result<u64, FormatError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    fn varint(&mut self, what: &'static str) -> Result<u64, FormatError> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = self.u8(what)?;
            if i == 9 && b > 1 {
                return Err(invalid(format!("{what}: a varint past 64 bits")));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(invalid(format!("{what}: a varint past 64 bits")))
    }

    /// A varint that counts things of at least `each` bytes still to come:
    /// more than the bytes left could hold is an error, before anything
    /// is allocated for them.
    fn count(&mut self, each: usize, what: &'static str) -> Result<usize, FormatError> {
        let n = self.varint(what)?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(each.max(1)) <= self.left() => Ok(n),
            _ => Err(invalid(format!(
                "{what}: {n}, more than the {} bytes left hold",
                self.left()
            ))),
        }
    }

    /// A varint that is a length in bytes within this node.
    fn len(&mut self, what: &'static str) -> Result<usize, FormatError> {
        let n = self.varint(what)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or_else(|| invalid(format!("{what}: {n} bytes, more than the node holds")))
    }

    fn varints(&mut self, n: usize, what: &'static str) -> Result<Vec<u64>, FormatError> {
        (0..n).map(|_| self.varint(what)).collect()
    }

    fn done(&self, what: &'static str) -> Result<(), FormatError> {
        match self.left() {
            0 => Ok(()),
            n => Err(invalid(format!("{what}: {n} bytes after its last field"))),
        }
    }
}

/// The body of an encoded manifest or node, checked: its magic, length,
/// version and CRC-32C, decompressed (zstd) within [`MAX_DECODED`].
fn body(bytes: &[u8], magic: u32, what: &'static str) -> Result<Vec<u8>, FormatError> {
    let mut r = Reader::new(bytes);
    let m = r.take(4, what)?;
    let found = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
    if found != magic {
        return Err(invalid(format!(
            "{what}: magic {found:#010x}, not OCDBT's {magic:#010x}"
        )));
    }
    let length = r.u64_le(what)?;
    if length != bytes.len() as u64 {
        return Err(invalid(format!("{what}: says {length} bytes, is {}", bytes.len())));
    }
    if bytes.len() < 16 {
        return Err(FormatError::Truncated(what));
    }
    let (covered, crc) = bytes.split_at(bytes.len() - 4);
    let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let have = crc32c::crc32c(covered);
    if want != have {
        return Err(invalid(format!(
            "{what}: CRC-32C {have:#010x}, not the {want:#010x} stored"
        )));
    }
    // The rest of the header, within what the checksum covers.
    let mut r = Reader {
        bytes: covered,
        at: r.at,
    };
    let version = r.varint(what)?;
    if version != 0 {
        return Err(invalid(format!(
            "{what}: format version {version}; nzfs reads version 0"
        )));
    }
    let compression = r.varint(what)?;
    let rest = &covered[r.at..];
    match compression {
        0 => Ok(rest.to_vec()),
        1 => {
            use std::io::Read;
            let mut out = Vec::new();
            let decoder = zstd::stream::read::Decoder::new(rest).map_err(|e| invalid(format!("{what}: zstd: {e}")))?;
            decoder
                .take(MAX_DECODED + 1)
                .read_to_end(&mut out)
                .map_err(|e| invalid(format!("{what}: zstd: {e}")))?;
            if out.len() as u64 > MAX_DECODED {
                return Err(invalid(format!(
                    "{what}: decompresses to more than {} MiB",
                    MAX_DECODED >> 20
                )));
            }
            Ok(out)
        }
        c => Err(invalid(format!(
            "{what}: compression {c}; nzfs reads none (0) and zstd (1)"
        ))),
    }
}

/// A data file table: each file's path (relative to the node's
/// transitive path) and the length of its base path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// `base_path + relative_path`.
    pub path: String,
    /// How much of `path` is the base path (the transitive part).
    pub base_len: usize,
}

fn data_file_table(r: &mut Reader<'_>) -> Result<Vec<DataFile>, FormatError> {
    let n = r.count(2, "data file table")?;
    let prefix = r.varints(n.saturating_sub(1), "data file path prefix")?;
    let suffix = r.varints(n, "data file path suffix")?;
    let base = r.varints(n, "data file base path")?;
    let paths = prefix_compressed(r, &prefix, &suffix, "data file path")?;
    let mut files = Vec::with_capacity(n);
    for (i, (path, base)) in paths.into_iter().zip(base).enumerate() {
        if path.len() > MAX_PATH {
            return Err(invalid(format!("data file {i}: a path over {MAX_PATH} bytes")));
        }
        let path = String::from_utf8(path).map_err(|_| invalid(format!("data file {i}: a path not UTF-8")))?;
        let base_len = usize::try_from(base)
            .ok()
            .filter(|&b| b <= path.len() && path.is_char_boundary(b))
            .ok_or_else(|| invalid(format!("data file {i}: a base path longer than its path")))?;
        files.push(DataFile { path, base_len });
    }
    Ok(files)
}

/// Byte strings prefix-compressed, as keys and data file paths are: the
/// `i`th shares `prefix[i - 1]` bytes with the one before it (the first
/// none), and its `suffix[i]` bytes of its own come next in `r`.
fn prefix_compressed(
    r: &mut Reader<'_>,
    prefix: &[u64],
    suffix: &[u64],
    what: &'static str,
) -> Result<Vec<Vec<u8>>, FormatError> {
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(suffix.len());
    for (i, &len) in suffix.iter().enumerate() {
        let previous = out.last().map_or(&[][..], Vec::as_slice);
        let keep = match i {
            0 => Some(0),
            _ => usize::try_from(prefix[i - 1]).ok().filter(|&k| k <= previous.len()),
        };
        let keep = keep.ok_or_else(|| invalid(format!("{what} {i}: a prefix longer than the one before it")))?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= r.left())
            .ok_or(FormatError::Truncated(what))?;
        let mut bytes = previous[..keep].to_vec();
        bytes.extend_from_slice(r.take(len, what)?);
        out.push(bytes);
    }
    Ok(out)
}

/// Where an encoded node (or an out-of-line value) is: a data file of the
/// table it was named in, a byte offset and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// An index into the table.
    pub file: usize,
    /// The byte offset in that file.
    pub offset: u64,
    /// The byte length.
    pub len: u64,
}

fn location(files: &[DataFile], file: u64, offset: u64, len: u64) -> Result<Location, FormatError> {
    let file = usize::try_from(file)
        .ok()
        .filter(|&f| f < files.len())
        .ok_or_else(|| invalid(format!("data file {file} of a table of {}", files.len())))?;
    if offset.checked_add(len).is_none_or(|end| end > i64::MAX as u64) {
        return Err(invalid(format!("a range {offset}+{len} past any file's end")));
    }
    Ok(Location { file, offset, len })
}

/// What a manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// The version tree is in the numbered manifests
    /// (`manifest.xxxxxxxxxxxxxxxx`).
    Numbered,
    /// The latest version: its B+tree root (`None`: an empty database),
    /// named in `files`.
    Single {
        /// The manifest's data file table.
        files: Vec<DataFile>,
        /// The root node and its height.
        root: Option<(Location, u8)>,
        /// The latest generation.
        generation: u64,
    },
}

/// Decode an encoded manifest (`manifest.ocdbt`, or a numbered one).
pub fn manifest(bytes: &[u8]) -> Result<Manifest, FormatError> {
    let body = body(bytes, MANIFEST_MAGIC, "manifest")?;
    let mut r = Reader::new(&body);
    r.take(16, "manifest uuid")?;
    let kind = r.varint("manifest kind")?;
    r.varint("max_inline_value_bytes")?;
    r.varint("max_decoded_node_bytes")?;
    let arity_log2 = r.u8("version_tree_arity_log2")?;
    if !(1..=16).contains(&arity_log2) {
        return Err(invalid(format!("version_tree_arity_log2 {arity_log2}")));
    }
    match r.varint("compression method")? {
        0 => {}
        1 => {
            r.u32_le("zstd level")?;
        }
        m => return Err(invalid(format!("compression method {m}"))),
    }
    match kind {
        0 => {}
        1 => {
            r.done("manifest")?;
            return Ok(Manifest::Numbered);
        }
        k => return Err(invalid(format!("manifest kind {k}"))),
    }
    let files = data_file_table(&mut r)?;
    // The inline versions: the newest last.
    let n = r.count(1, "inline versions")?;
    let generations = r.varints(n, "generation number")?;
    let heights = r.take(n, "root height")?.to_vec();
    let ids = r.varints(n, "root data file")?;
    let offsets = r.varints(n, "root offset")?;
    let lens = r.varints(n, "root length")?;
    r.varints(n, "num_keys")?;
    r.varints(n, "num_tree_bytes")?;
    r.varints(n, "num_indirect_value_bytes")?;
    for _ in 0..n {
        r.u64_le("commit time")?;
    }
    if generations.windows(2).any(|w| w[0] >= w[1]) || generations.first() == Some(&0) {
        return Err(invalid("generation numbers not increasing from 1"));
    }
    // The version nodes (older versions) are not read: only the latest is
    // shown. Their encoding is checked to end the manifest.
    let m = r.count(1, "version nodes")?;
    // Generation, data file, offset, length and num_generations of each.
    for _ in 0..5 {
        r.varints(m, "version node")?;
    }
    for _ in 0..m {
        r.u64_le("version node commit time")?;
    }
    r.take(m, "version node height")?;
    r.done("manifest")?;
    let Some(last) = n.checked_sub(1) else {
        return Ok(Manifest::Single {
            files,
            root: None,
            generation: 0,
        });
    };
    // An empty tree's root is all ones (tensorstore's missing address).
    let root = match (offsets[last], lens[last]) {
        (u64::MAX, _) | (_, u64::MAX) => None,
        (offset, len) => Some((location(&files, ids[last], offset, len)?, heights[last])),
    };
    Ok(Manifest::Single {
        files,
        root,
        generation: generations[last],
    })
}

/// A leaf entry's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Stored in the leaf.
    Inline(Vec<u8>),
    /// Out of line, in a data file of the leaf's table.
    At(Location),
}

/// A decoded B+tree node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its height (0 for a leaf).
    pub height: u8,
    /// Its data file table.
    pub files: Vec<DataFile>,
    /// Its entries.
    pub entries: Entries,
}

/// A node's entries: keys relative to the prefix the path to it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entries {
    /// A leaf's keys and values.
    Leaf(Vec<(Vec<u8>, Value)>),
    /// An interior node's children: each one's relative key, how much of
    /// it all keys below share, and where the child is.
    Interior(Vec<(Vec<u8>, usize, Location)>),
}

/// Keys prefix-compressed: the shared prefix lengths (one fewer than
/// keys), then the suffix lengths, then the suffixes.
fn keys(r: &mut Reader<'_>, n: usize, extra: Option<&mut Vec<usize>>) -> Result<Vec<Vec<u8>>, FormatError> {
    let prefix = r.varints(n.saturating_sub(1), "key prefix length")?;
    let suffix = r.varints(n, "key suffix length")?;
    if let Some(extra) = extra {
        for _ in 0..n {
            extra.push(r.len("subtree common prefix length")?);
        }
    }
    let keys = prefix_compressed(r, &prefix, &suffix, "key")?;
    if let Some(i) = keys.windows(2).position(|w| w[1] <= w[0]) {
        return Err(invalid(format!("key {}: not after the key before it", i + 1)));
    }
    Ok(keys)
}

/// Decode an encoded B+tree node.
pub fn node(bytes: &[u8]) -> Result<Node, FormatError> {
    let body = body(bytes, BTREE_MAGIC, "B+tree node")?;
    let mut r = Reader::new(&body);
    let height = r.u8("node height")?;
    let files = data_file_table(&mut r)?;
    let n = r.count(2, "node entries")?;
    let entries = if height == 0 {
        let keys = keys(&mut r, n, None)?;
        let lens = r.varints(n, "value length")?;
        let kinds = r.varints(n, "value kind")?;
        let indirect = kinds.iter().filter(|&&k| k == 1).count();
        if kinds.iter().any(|&k| k > 1) {
            return Err(invalid("a value kind other than 0 (inline) and 1 (out of line)"));
        }
        let ids = r.varints(indirect, "value data file")?;
        let offsets = r.varints(indirect, "value offset")?;
        let mut out = Vec::with_capacity(n);
        let mut k = 0;
        for (i, key) in keys.into_iter().enumerate() {
            let value = if kinds[i] == 1 {
                let at = location(&files, ids[k], offsets[k], lens[i])?;
                k += 1;
                Value::At(at)
            } else {
                let len = usize::try_from(lens[i])
                    .ok()
                    .filter(|&l| l <= r.left())
                    .ok_or(FormatError::Truncated("inline value"))?;
                Value::Inline(r.take(len, "inline value")?.to_vec())
            };
            out.push((key, value));
        }
        Entries::Leaf(out)
    } else {
        let mut common = Vec::with_capacity(n);
        let keys = keys(&mut r, n, Some(&mut common))?;
        let ids = r.varints(n, "child data file")?;
        let offsets = r.varints(n, "child offset")?;
        let lens = r.varints(n, "child length")?;
        r.varints(n, "num_keys")?;
        r.varints(n, "num_tree_bytes")?;
        r.varints(n, "num_indirect_value_bytes")?;
        let mut out = Vec::with_capacity(n);
        for (i, key) in keys.into_iter().enumerate() {
            if common[i] > key.len() {
                return Err(invalid(format!("child {i}: a common prefix longer than its key")));
            }
            out.push((key, common[i], location(&files, ids[i], offsets[i], lens[i])?));
        }
        Entries::Interior(out)
    };
    r.done("B+tree node")?;
    Ok(Node { height, files, entries })
}

#[cfg(test)]
pub(super) mod tests;
