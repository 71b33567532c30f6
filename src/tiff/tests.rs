//! Layout arithmetic of the virtual TIFF. What the bytes mean is checked by
//! real readers through a mount (GDAL in `tests/tiff.rs`, tifffile in
//! `scripts/check_tiff.py`).

use super::*;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn small_arrays_are_classic_and_large_ones_bigtiff() {
    let f32s = (32, Sample::Float);
    let small = Layout::of(&[10, 20, 14], f32s, 10).unwrap();
    assert!(!small.big);
    assert_eq!((small.pages, small.height, small.width), (10, 20, 14));
    assert_eq!((small.rows_per_strip, small.strips), (10, 2));
    assert_eq!(small.size, small.prefix + 10 * 20 * 14 * 4);
    // 5 GiB of float32: past what 32-bit offsets reach.
    let big = Layout::of(&[5, 16384, 16384], f32s, 512).unwrap();
    assert!(big.big && big.size > u64::from(u32::MAX));
    assert_eq!(big.size, big.prefix + 5 * 16384 * 16384 * 4);
}

#[test]
fn no_tiff_for_fewer_than_two_or_empty_dimensions_or_past_u64() {
    let u8s = (8, Sample::Unsigned);
    assert!(Layout::of(&[7], u8s, 1).is_none());
    assert!(Layout::of(&[], u8s, 1).is_none());
    assert!(Layout::of(&[0, 4, 4], u8s, 1).is_none());
    assert!(Layout::of(&[4, 0], u8s, 1).is_none());
    assert!(Layout::of(&[u64::MAX, 1 << 40, 4, 4], u8s, 1).is_none());
}

#[test]
fn a_strip_holds_at_most_a_band_of_chunk_rows_and_a_bounded_size() {
    let l = Layout::of(&[100, 7], (16, Sample::Signed), 30).unwrap();
    assert_eq!((l.rows_per_strip, l.strips), (30, 4));
    // A band of 4096 rows of 65536 float64 would be 2 GiB: cut to 8 MiB.
    let wide = Layout::of(&[4096, 65536], (64, Sample::Float), 4096).unwrap();
    assert_eq!(wide.rows_per_strip * 65536 * 8, MAX_STRIP_BYTES);
}

#[test]
fn the_prefix_reads_the_same_in_any_pieces_and_chains_its_pages() {
    for layout in [
        Layout::of(&[3, 4, 5, 6], (8, Sample::Unsigned), 2).unwrap(),
        Layout::of(&[3, 5, 6], (8, Sample::Unsigned), 5).unwrap(),
    ] {
        let mut whole = vec![0u8; layout.prefix as usize];
        layout.read_prefix(0, &mut whole);
        for cut in [1, 7, 13, 64] {
            let mut pieces = Vec::new();
            let mut at = 0;
            while at < layout.prefix {
                let mut part = vec![0u8; cut.min((layout.prefix - at) as usize)];
                layout.read_prefix(at, &mut part);
                at += part.len() as u64;
                pieces.extend(part);
            }
            assert_eq!(pieces, whole, "pieces of {cut}");
        }
        // Follow the IFD chain: one IFD per page, each naming the image.
        let mut ifd = u32_at(&whole, 4) as usize;
        let mut pages = 0;
        while ifd != 0 {
            assert_eq!(u16_at(&whole, ifd), ENTRIES as u16);
            assert_eq!(u16_at(&whole, ifd + 2), IMAGE_WIDTH);
            assert_eq!(u32_at(&whole, ifd + 2 + 8) as u64, layout.width);
            pages += 1;
            ifd = u32_at(&whole, ifd + 2 + 12 * ENTRIES as usize) as usize;
        }
        assert_eq!(pages, layout.pages);
    }
}
