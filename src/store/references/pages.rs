//! The page headers of a Parquet record file, walked before the parquet
//! crate reads it: each page header declares the size the page
//! decompresses to, and the crate allocates that size before it
//! decompresses, so a 17 KB file of zstd pages can claim gigabytes. The
//! walk sums what every page of every column chunk declares, and the
//! caller refuses a file whose sum passes its bound.
//!
//! Page headers are Thrift compact-protocol structs; only fields 2
//! (`uncompressed_page_size`) and 3 (`compressed_page_size`) are read, and
//! everything else is skipped. Invariants: the walk reads only inside each
//! column chunk's byte range, allocates nothing, nests at most
//! [`MAX_DEPTH`] structs and takes time linear in the file (every element
//! skipped consumes at least one byte, so a declared length longer than
//! the file ends at the file's end as an error).

/// Structs and containers nested deeper than this are refused.
const MAX_DEPTH: usize = 32;

/// Why a record file's page headers cannot be walked.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// A header runs past its column chunk, or the chunk past the file.
    #[error("a page header or page runs past its column chunk")]
    Truncated,
    /// A Thrift type or nesting this walk does not accept.
    #[error("a page header that is not Thrift compact protocol")]
    Malformed,
    /// A header without one of the two sizes, or with one below zero.
    #[error("a page header without its sizes, or with a negative one")]
    Sizes,
}

/// A reader over the bytes of one column chunk.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, PageError> {
        let b = *self.bytes.get(self.pos).ok_or(PageError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: u64) -> Result<(), PageError> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(PageError::Truncated);
        }
        self.pos += n as usize;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, PageError> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(PageError::Malformed);
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(PageError::Malformed)
    }

    fn zigzag(&mut self) -> Result<i64, PageError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// Skip one value of compact type `ty`.
    fn skip_value(&mut self, ty: u8, depth: usize) -> Result<(), PageError> {
        match ty {
            // true and false as struct fields carry no byte; in a
            // container each is one byte (read by the caller's loop).
            1 | 2 => Ok(()),
            3 => self.skip(1),
            4..=6 => self.varint().map(drop),
            7 => self.skip(8),
            8 => {
                let n = self.varint()?;
                self.skip(n)
            }
            9 | 10 => {
                let head = self.byte()?;
                let n = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.skip_elements(n, &[head & 0x0f], depth)
            }
            11 => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kinds = self.byte()?;
                self.skip_elements(n, &[kinds >> 4, kinds & 0x0f], depth)
            }
            12 => self.skip_struct(depth + 1, |_, _, _| Ok(false)),
            13 => self.skip(16),
            _ => Err(PageError::Malformed),
        }
    }

    /// Skip `n` container elements, each a value of every type in `kinds`.
    fn skip_elements(&mut self, n: u64, kinds: &[u8], depth: usize) -> Result<(), PageError> {
        if depth >= MAX_DEPTH {
            return Err(PageError::Malformed);
        }
        for _ in 0..n {
            for &ty in kinds {
                match ty {
                    1 | 2 => self.skip(1)?,
                    // Each element takes at least one byte, so a count
                    // longer than the chunk ends at its end.
                    _ => {
                        let before = self.pos;
                        self.skip_value(ty, depth + 1)?;
                        if self.pos == before {
                            return Err(PageError::Malformed);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Walk a struct's fields to its stop byte. `field(cursor, id, type)`
    /// reads a field it wants and answers true, or false to have it skipped.
    fn skip_struct(
        &mut self,
        depth: usize,
        mut field: impl FnMut(&mut Self, i64, u8) -> Result<bool, PageError>,
    ) -> Result<(), PageError> {
        if depth >= MAX_DEPTH {
            return Err(PageError::Malformed);
        }
        let mut id = 0i64;
        loop {
            let head = self.byte()?;
            let ty = head & 0x0f;
            if ty == 0 {
                return Ok(());
            }
            id = match head >> 4 {
                0 => self.zigzag()?,
                delta => id + i64::from(delta),
            };
            if !field(self, id, ty)? {
                self.skip_value(ty, depth)?;
            }
        }
    }
}

/// One page header at the start of `bytes`: (decompressed size, stored
/// size, the header's own length).
fn page_header(bytes: &[u8]) -> Result<(u64, u64, usize), PageError> {
    let mut c = Cursor { bytes, pos: 0 };
    let (mut plain, mut stored) = (None, None);
    c.skip_struct(0, |c, id, ty| {
        if ty != 5 || !(id == 2 || id == 3) {
            return Ok(false);
        }
        let v = u64::try_from(c.zigzag()?).map_err(|_| PageError::Sizes)?;
        if id == 2 {
            plain = Some(v)
        } else {
            stored = Some(v)
        }
        Ok(true)
    })?;
    match (plain, stored) {
        (Some(p), Some(s)) => Ok((p, s, c.pos)),
        _ => Err(PageError::Sizes),
    }
}

/// The decompressed bytes that the pages of the column chunks `columns`
/// (each its first byte and length in `file`) declare, summed.
pub fn declared_bytes(file: &[u8], columns: impl IntoIterator<Item = (u64, u64)>) -> Result<u64, PageError> {
    let mut total = 0u64;
    for (start, len) in columns {
        let end = start.checked_add(len).ok_or(PageError::Truncated)?;
        let chunk = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| file.get(s..e))
            .ok_or(PageError::Truncated)?;
        let mut pos = 0usize;
        while pos < chunk.len() {
            let (plain, stored, header) = page_header(&chunk[pos..])?;
            total = total.saturating_add(plain);
            let next = (header as u64).checked_add(stored).ok_or(PageError::Truncated)?;
            if next > (chunk.len() - pos) as u64 {
                return Err(PageError::Truncated);
            }
            pos += next as usize;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact-protocol page header: type, sizes, then a nested
    /// data-page header struct (field 5) holding a list and a binary.
    fn header(plain: i32, stored: i32) -> Vec<u8> {
        let zz = |v: i32| -> Vec<u8> {
            let mut u = ((v << 1) ^ (v >> 31)) as u32 as u64;
            let mut out = Vec::new();
            loop {
                let b = (u & 0x7f) as u8;
                u >>= 7;
                if u == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        };
        let mut h = vec![0x15];
        h.extend(zz(0));
        h.push(0x15);
        h.extend(zz(plain));
        h.push(0x15);
        h.extend(zz(stored));
        // field 5, a struct: field 1 i32, field 2 a list of 3 i8, field 3
        // binary of 2 bytes, field 4 true, stop.
        h.extend([0x2c, 0x15, 0x02, 0x19, 0x33, 1, 2, 3, 0x18, 2, b'h', b'i', 0x11, 0x00]);
        h.push(0x00);
        h
    }

    #[test]
    fn sizes_are_summed_over_pages_and_columns() {
        let mut file = b"PAR1".to_vec();
        let a = file.len() as u64;
        file.extend(header(100, 3));
        file.extend([9, 9, 9]);
        file.extend(header(1 << 28, 2));
        file.extend([9, 9]);
        let b = file.len() as u64;
        file.extend(header(7, 1));
        file.push(0);
        let end = file.len() as u64;
        let got = declared_bytes(&file, [(a, b - a), (b, end - b)]).unwrap();
        assert_eq!(got, 100 + (1 << 28) + 7);
    }

    #[test]
    fn short_lying_and_deep_headers_are_errors() {
        let h = header(10, 5);
        // The page's bytes are missing.
        assert!(matches!(
            declared_bytes(&h, [(0, h.len() as u64)]),
            Err(PageError::Truncated)
        ));
        // A chunk past the file.
        assert!(matches!(declared_bytes(&h, [(0, 1 << 40)]), Err(PageError::Truncated)));
        assert!(matches!(declared_bytes(&h, [(u64::MAX, 2)]), Err(PageError::Truncated)));
        // A negative size.
        let mut neg = header(-1, 0);
        assert!(matches!(page_header(&neg), Err(PageError::Sizes)));
        neg.truncate(3);
        assert!(page_header(&neg).is_err());
        // A list declaring 2^40 elements in a few bytes ends at the end.
        let mut long = vec![0x19, 0xf3];
        long.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        long.extend([1; 64]);
        assert!(matches!(page_header(&long), Err(PageError::Truncated)));
        // Structs nested 10,000 deep: refused, no stack overflow.
        let deep = vec![0x1c; 10_000];
        assert!(matches!(page_header(&deep), Err(PageError::Malformed)));
        // A list of empty-struct-free stops cannot loop without input.
        assert!(page_header(&[0x19, 0xf0, 0x80, 0x80, 0x80, 0x80, 0x10]).is_err());
    }
}
