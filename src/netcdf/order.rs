//! The file's byte order: a variable's values as `data.bin` holds them
//! (host order) turned into the `.nc`'s big-endian elements, with the
//! recodings classic netCDF needs (float16 widened to float, UTF-32 text
//! as UTF-8 chars).
//!
//! Invariant: [`copy_in_file_order`] (one pass, no buffer) writes exactly
//! what [`to_file_order`] gives whenever it accepts the job; the test holds
//! the two to each other.

use super::Variable;

/// Write `host` (whole elements of `var`, host order) to `dst` in the
/// file's order, when that is a byte-order change alone (no widening or
/// recoding); false (nothing written) otherwise. One pass, no buffer:
/// each unit is copied byte-swapped.
pub fn copy_in_file_order(var: &Variable, host: &[u8], dst: &mut [u8]) -> bool {
    if var.utf32_to_utf8 || var.widen_f16 || var.item_in != var.item_out || host.len() != dst.len() {
        return false;
    }
    macro_rules! swapped {
        ($t:ty, $n:expr) => {
            for (d, s) in dst.chunks_exact_mut($n).zip(host.chunks_exact($n)) {
                let v = <$t>::from_ne_bytes(s.try_into().expect("a unit"));
                d.copy_from_slice(&v.to_be_bytes());
            }
        };
    }
    match var.swap_unit {
        2 if host.len().is_multiple_of(2) => swapped!(u16, 2),
        4 if host.len().is_multiple_of(4) => swapped!(u32, 4),
        8 if host.len().is_multiple_of(8) => swapped!(u64, 8),
        0 | 1 => dst.copy_from_slice(host),
        _ => return false,
    }
    true
}

/// Turn host-order elements (as `data.bin` holds them) into the file's
/// big-endian elements.
pub fn to_file_order(var: &Variable, host: &[u8]) -> Vec<u8> {
    if var.utf32_to_utf8 {
        let mut out = Vec::with_capacity(host.len());
        for element in host.chunks_exact(var.item_in) {
            let start = out.len();
            let text: String = element
                .chunks_exact(4)
                .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]]))
                .take_while(|&c| c != 0)
                .map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            out.extend_from_slice(text.as_bytes());
            out.resize(start + var.item_out, 0);
        }
        return out;
    }
    if var.widen_f16 {
        return host
            .chunks_exact(2)
            .flat_map(|h| half::f16::from_ne_bytes([h[0], h[1]]).to_f32().to_be_bytes())
            .collect();
    }
    // Written independently of copy_in_file_order, whose test holds it to
    // what this writes.
    let mut out = host.to_vec();
    if cfg!(target_endian = "little") && var.swap_unit > 1 {
        for unit in out.chunks_exact_mut(var.swap_unit) {
            unit.reverse();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(item: usize, swap_unit: usize) -> Variable {
        Variable {
            node: 0,
            begin: 0,
            len: 0,
            item_in: item,
            item_out: item,
            swap_unit,
            widen_f16: false,
            utf32_to_utf8: false,
        }
    }

    #[test]
    fn the_one_pass_copy_writes_what_the_converted_copy_holds() {
        let host: Vec<u8> = (0..48u8).collect();
        // Bytes, shorts, floats, doubles, complex64 (two 4-byte units).
        for (item, unit) in [(1, 1), (2, 2), (4, 4), (8, 8), (8, 4)] {
            let v = var(item, unit);
            let mut dst = vec![0xAA; host.len()];
            assert!(copy_in_file_order(&v, &host, &mut dst), "{item}/{unit}");
            assert_eq!(dst, to_file_order(&v, &host), "{item}/{unit}");
        }
        // Not a byte-order change alone, or not whole units: refused,
        // nothing written.
        let mut dst = vec![0xAA; 8];
        let widen = Variable {
            widen_f16: true,
            item_out: 4,
            ..var(2, 2)
        };
        assert!(!copy_in_file_order(&widen, &host[..8], &mut dst));
        assert!(!copy_in_file_order(&var(4, 4), &host[..6], &mut dst[..6]));
        assert!(!copy_in_file_order(&var(4, 4), &host[..8], &mut dst[..4]));
        assert_eq!(dst, [0xAA; 8]);
    }
}
