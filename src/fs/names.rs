//! Chunk file names: grid index <-> `"03.1.2.bin"` (`.txt` for the chunks
//! of a variable-length string array, which have no binary form).
//!
//! Each index is written in decimal, zero-padded to the width of the largest
//! index in its dimension, joined with `.`, and followed by `.bin`, so that
//! `ls` and shell globs list chunks in C order. A 0-d array's one chunk is
//! `0.bin`. Only the canonical spelling of a name is accepted on lookup.

/// The naming of one array's chunk grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkNames {
    grid_shape: Vec<u64>,
    widths: Vec<usize>,
    count: u64,
    suffix: &'static str,
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

impl ChunkNames {
    /// `grid_shape`'s product must fit `u64` (checked by the metadata parser).
    pub fn new(grid_shape: &[u64]) -> Self {
        Self::with_suffix(grid_shape, ".bin")
    }

    /// Names ending in `suffix` (`".bin"` or `".txt"`).
    pub fn with_suffix(grid_shape: &[u64], suffix: &'static str) -> Self {
        let widths = grid_shape.iter().map(|&g| digits(g.saturating_sub(1))).collect();
        let count = grid_shape.iter().product();
        ChunkNames {
            grid_shape: grid_shape.to_vec(),
            widths,
            count,
            suffix,
        }
    }

    /// Number of chunks (1 for a 0-d array, 0 with a zero-length dimension).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The grid index of the `linear`-th chunk in C order.
    pub fn unravel(&self, linear: u64) -> Vec<u64> {
        crate::zarr::chunk_key::unravel(&self.grid_shape, linear)
    }

    /// The file name of the `linear`-th chunk.
    pub fn name(&self, linear: u64) -> String {
        if self.grid_shape.is_empty() {
            return format!("0{}", self.suffix);
        }
        let mut out = String::new();
        for (d, i) in self.unravel(linear).into_iter().enumerate() {
            if d > 0 {
                out.push('.');
            }
            out.push_str(&format!("{i:0width$}", width = self.widths[d]));
        }
        out.push_str(self.suffix);
        out
    }

    /// The linear index named by `name`, if it is a canonical chunk name.
    pub fn parse(&self, name: &str) -> Option<u64> {
        let stem = name.strip_suffix(self.suffix)?;
        if self.grid_shape.is_empty() {
            return (stem == "0").then_some(0);
        }
        let parts: Vec<&str> = stem.split('.').collect();
        if parts.len() != self.grid_shape.len() {
            return None;
        }
        let mut linear = 0u64;
        for ((part, &width), &g) in parts.iter().zip(&self.widths).zip(&self.grid_shape) {
            if part.len() != width || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let i: u64 = part.parse().ok()?;
            if i >= g {
                return None;
            }
            linear = linear * g + i;
        }
        Some(linear)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_names_in_c_order() {
        let n = ChunkNames::new(&[12, 3]);
        assert_eq!(n.count(), 36);
        assert_eq!(n.name(0), "00.0.bin");
        assert_eq!(n.name(35), "11.2.bin");
        let names: Vec<_> = (0..n.count()).map(|i| n.name(i)).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for i in 0..n.count() {
            assert_eq!(n.parse(&n.name(i)), Some(i));
        }
    }

    #[test]
    fn only_canonical_names_parse() {
        let n = ChunkNames::new(&[12, 3]);
        for bad in [
            "0.0.bin",
            "00.3.bin",
            "12.0.bin",
            "00.0",
            "00.0.0.bin",
            "+1.0.bin",
            "0a.0.bin",
            "header.cdl",
        ] {
            assert_eq!(n.parse(bad), None, "{bad}");
        }
        let scalar = ChunkNames::new(&[]);
        assert_eq!(
            (scalar.count(), scalar.name(0), scalar.parse("0.bin")),
            (1, "0.bin".into(), Some(0))
        );
        assert_eq!(ChunkNames::new(&[0, 4]).count(), 0);
        assert_eq!(ChunkNames::new(&[1]).name(0), "0.bin");
    }
}
