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

fn prefix_of(layout: &Layout) -> Vec<u8> {
    let mut whole = vec![0u8; layout.prefix as usize];
    layout.read_prefix(0, &mut whole);
    whole
}

/// The prefix read in pieces of several sizes is `whole`, byte for byte.
fn assert_reads_the_same_in_pieces(layout: &Layout, whole: &[u8]) {
    for cut in [1, 5, 7, 13, 64] {
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
}

#[test]
fn small_arrays_are_classic_and_large_ones_bigtiff() {
    let f32s = (32, Sample::Float);
    let small = Layout::of(&[10, 20, 14], f32s, 10).unwrap();
    assert!(!small.big);
    assert_eq!(
        (small.pages, small.levels[0].height, small.levels[0].width),
        (10, 20, 14)
    );
    assert_eq!((small.levels[0].rows_per_strip, small.levels[0].strips), (10, 2));
    // Each page's 1,120 bytes of pixels start on a memory page.
    assert_eq!(small.size, small.prefix + 10 * 4096);
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

/// ImageWidth, ImageLength and RowsPerStrip are LONG (32 bits) in BigTIFF
/// too, and no file can be read past i64::MAX (off_t): no TIFF for a side
/// of 2^32 or more (it would say 16 for 2^32 + 16), nor one that large.
#[test]
fn no_tiff_for_a_side_past_32_bits_or_a_file_past_i64() {
    let u8s = (8, Sample::Unsigned);
    assert!(Layout::of(&[1, (1 << 32) + 16], u8s, 1).is_none());
    assert!(Layout::of(&[(1 << 32) + 16, 1], u8s, 1).is_none());
    let widest = Layout::of(&[1, u64::from(u32::MAX)], u8s, 1).unwrap();
    assert_eq!(widest.levels[0].width, u64::from(u32::MAX));
    // 2^31 pages of 2^32 bytes: 2^63 bytes of pixels.
    assert!(Layout::of(&[1 << 31, 1 << 16, 1 << 16], u8s, 1).is_none());
    assert!(Layout::of(&[1 << 29, 1 << 16, 1 << 16], u8s, 1).is_some_and(|l| l.size <= i64::MAX as u64));
}

#[test]
fn a_strip_holds_at_most_a_band_of_chunk_rows_and_a_bounded_size() {
    let l = Layout::of(&[100, 7], (16, Sample::Signed), 30).unwrap();
    assert_eq!((l.levels[0].rows_per_strip, l.levels[0].strips), (30, 4));
    // A band of 4096 rows of 65536 float64 would be 2 GiB: cut to 8 MiB.
    let wide = Layout::of(&[4096, 65536], (64, Sample::Float), 4096).unwrap();
    assert_eq!(wide.levels[0].rows_per_strip * 65536 * 8, MAX_STRIP_BYTES);
}

/// Hostile shapes cannot make a page's block (rendered whole on a read)
/// large: a page has at most MAX_STRIPS strips, a pyramid MAX_LEVELS
/// levels.
#[test]
fn a_pages_strip_tables_and_levels_are_bounded() {
    // The tallest side a TIFF states (ImageLength is 32 bits).
    let narrow = Layout::of(&[u64::from(u32::MAX), 1], (8, Sample::Unsigned), 1).unwrap();
    assert!(
        (MAX_STRIPS / 2..=MAX_STRIPS).contains(&narrow.levels[0].strips),
        "{}",
        narrow.levels[0].strips
    );
    assert!(narrow.prefix < 20 << 20, "{}", narrow.prefix);
    let same = LevelShape {
        shape: &[4, 4],
        band: 4,
        cols: None,
    };
    let many: Vec<LevelShape> = (0..=MAX_LEVELS).map(|_| LevelShape { ..same }).collect();
    assert!(Layout::pyramid(&many, (8, Sample::Unsigned), None).is_none());
    assert!(Layout::pyramid(&many[..MAX_LEVELS], (8, Sample::Unsigned), None).is_some());
}

#[test]
fn the_prefix_reads_the_same_in_any_pieces_and_chains_its_pages() {
    for layout in [
        Layout::of(&[3, 4, 5, 6], (8, Sample::Unsigned), 2).unwrap(),
        Layout::of(&[3, 5, 6], (8, Sample::Unsigned), 5).unwrap(),
    ] {
        let whole = prefix_of(&layout);
        assert_reads_the_same_in_pieces(&layout, &whole);
        // Follow the IFD chain: one IFD per page, each naming the image.
        let mut ifd = u32_at(&whole, 4) as usize;
        let mut pages = 0;
        while ifd != 0 {
            assert_eq!(u16_at(&whole, ifd), ENTRIES as u16);
            assert_eq!(u16_at(&whole, ifd + 2), IMAGE_WIDTH);
            assert_eq!(u32_at(&whole, ifd + 2 + 8) as u64, layout.levels[0].width);
            pages += 1;
            ifd = u32_at(&whole, ifd + 2 + 12 * ENTRIES as usize) as usize;
        }
        assert_eq!(pages, layout.pages);
    }
}

/// The value of tag `tag` in the classic IFD at `ifd`: `(type, count,
/// value field)`.
fn tag_at(b: &[u8], ifd: usize, tag: u16) -> Option<(u16, u32, u32)> {
    let n = u16_at(b, ifd) as usize;
    (0..n)
        .map(|k| ifd + 2 + 12 * k)
        .find_map(|e| (u16_at(b, e) == tag).then(|| (u16_at(b, e + 2), u32_at(b, e + 4), u32_at(b, e + 8))))
}

#[test]
fn a_pyramid_gives_each_page_its_lower_levels_as_subifds() {
    let u16s = (16, Sample::Unsigned);
    let levels = [
        LevelShape {
            shape: &[2, 3, 32, 48],
            band: 16,
            cols: None,
        },
        LevelShape {
            shape: &[2, 3, 16, 24],
            band: 16,
            cols: None,
        },
        LevelShape {
            shape: &[2, 3, 8, 12],
            band: 8,
            cols: None,
        },
    ];
    let xml = "<OME>an image of two levels below the first</OME>";
    let layout = Layout::pyramid(&levels, u16s, Some(xml)).unwrap();
    assert!(!layout.big);
    assert_eq!(layout.pages, 6);
    // Each level's planes (3,072, 768 and 192 bytes) start on a memory
    // page each.
    assert_eq!(layout.size, layout.prefix + 3 * 4096 * 6);
    let whole = prefix_of(&layout);
    // The description is page 0's alone, NUL-terminated.
    let first = u32_at(&whole, 4) as usize;
    let (ty, count, at) = tag_at(&whole, first, IMAGE_DESCRIPTION).unwrap();
    assert_eq!((ty, count as usize), (ASCII, xml.len() + 1));
    assert_eq!(
        &whole[at as usize..at as usize + xml.len() + 1],
        format!("{xml}\0").as_bytes()
    );
    let mut ifd = first;
    let mut page = 0u64;
    while ifd != 0 {
        assert_eq!(tag_at(&whole, ifd, IMAGE_DESCRIPTION).is_some(), page == 0);
        let (_, subs, table) = tag_at(&whole, ifd, SUB_IFDS).unwrap();
        assert_eq!(subs, 2);
        for level in 1..3usize {
            let sub = u32_at(&whole, table as usize + 4 * (level - 1)) as usize;
            assert_eq!(tag_at(&whole, sub, NEW_SUBFILE_TYPE).unwrap().2, 1);
            assert_eq!(
                tag_at(&whole, sub, IMAGE_WIDTH).unwrap().2 as u64,
                layout.levels[level].width
            );
            // A level's page p starts at its pixels plus p planes, each
            // on a memory page of its own.
            let plane = &layout.levels[level];
            assert_eq!(plane.stored, 4096);
            let (_, strips, offsets) = tag_at(&whole, sub, STRIP_OFFSETS).unwrap();
            let first_strip = if strips == 1 {
                offsets
            } else {
                u32_at(&whole, offsets as usize)
            };
            assert_eq!(u64::from(first_strip), layout.pixels[level] + page * 4096);
            // Each SubIFD chain is one IFD long.
            let next_at = sub + 2 + 12 * (ENTRIES + 1) as usize;
            assert_eq!(u32_at(&whole, next_at), 0);
        }
        page += 1;
        let n = u16_at(&whole, ifd) as usize;
        ifd = u32_at(&whole, ifd + 2 + 12 * n) as usize;
    }
    assert_eq!(page, layout.pages);
    assert_reads_the_same_in_pieces(&layout, &whole);
}

#[test]
fn pyramid_pixels_are_each_levels_data_in_turn() {
    let u8s = (8, Sample::Unsigned);
    let levels = [
        LevelShape {
            shape: &[4, 6],
            band: 4,
            cols: None,
        },
        LevelShape {
            shape: &[2, 3],
            band: 2,
            cols: None,
        },
    ];
    let layout = Layout::pyramid(&levels, u8s, None).unwrap();
    let p = layout.prefix;
    assert_eq!(layout.size, p + 24 + 6);
    let data = |level, offset, len| Piece::Data { level, offset, len };
    assert_eq!(layout.pixel_pieces(p, p + 24), [data(0, 0, 24)]);
    assert_eq!(layout.pixel_pieces(p + 20, p + 27), [data(0, 20, 4), data(1, 0, 3)]);
    assert_eq!(layout.pixel_pieces(p + 25, layout.size), [data(1, 1, 5)]);
}

#[test]
fn no_pyramid_of_levels_with_other_planes_counts() {
    let u8s = (8, Sample::Unsigned);
    let halved_z = [
        LevelShape {
            shape: &[4, 8, 8],
            band: 8,
            cols: None,
        },
        LevelShape {
            shape: &[2, 4, 4],
            band: 4,
            cols: None,
        },
    ];
    assert!(Layout::pyramid(&halved_z, u8s, None).is_none());
    assert!(Layout::pyramid(&[], u8s, None).is_none());
}

/// A plane past TILE_ABOVE on a side is in tiles near the chunk's plane
/// (sides multiples of 16); edge tiles are padded, and each tile row is a
/// run of data.bin or zeros past the edge.
#[test]
fn a_large_plane_is_tiled_and_its_tiles_map_to_data_bin_rows() {
    let u8s = (8, Sample::Unsigned);
    let (h, w) = (40u64, TILE_ABOVE + 100);
    let levels = [
        LevelShape {
            shape: &[h, w],
            band: 30,
            cols: Some(1000),
        },
        LevelShape {
            shape: &[h / 2, w / 2],
            band: 30,
            cols: Some(1000),
        },
    ];
    let layout = Layout::pyramid(&levels, u8s, None).unwrap();
    let (big, small) = (&layout.levels[0], &layout.levels[1]);
    // 30 rows -> 32, 1000 columns -> 1008.
    assert_eq!((big.tile_width, big.rows_per_strip), (Some(1008), 32));
    assert_eq!(big.strips, 2 * w.div_ceil(1008));
    assert_eq!(small.tile_width, None, "a plane within TILE_ABOVE stays in strips");
    let tile = 1008 * 32;
    assert_eq!(layout.size, layout.prefix + big.strips * tile + (h / 2) * (w / 2));
    let p = layout.prefix;
    let data = |offset, len| Piece::Data { level: 0, offset, len };
    // Tile 0, row 1: data.bin's row 1, first 1008 bytes.
    assert_eq!(layout.pixel_pieces(p + 1008, p + 2016), [data(w, 1008)]);
    // The last tile of the first tile row: 8292 - 8 * 1008 = 228 columns,
    // then padding.
    let last = p + (w.div_ceil(1008) - 1) * tile;
    assert_eq!(
        layout.pixel_pieces(last, last + 1008),
        [data(8 * 1008, 228), Piece::Zero(1008 - 228)]
    );
    // The second tile row holds rows 32..40, then 24 rows of padding.
    let second = p + w.div_ceil(1008) * tile;
    assert_eq!(
        layout.pixel_pieces(second + 8 * 1008, second + 9 * 1008),
        [Piece::Zero(1008)]
    );
    assert_eq!(layout.pixel_pieces(second, second + 10), [data(32 * w, 10)]);
    // The IFD declares the tiles.
    let whole = prefix_of(&layout);
    let ifd = u32_at(&whole, 4) as usize;
    assert_eq!(tag_at(&whole, ifd, TILE_WIDTH).unwrap().2, 1008);
    assert_eq!(tag_at(&whole, ifd, TILE_LENGTH).unwrap().2, 32);
    assert!(tag_at(&whole, ifd, STRIP_OFFSETS).is_none());
    let (_, n, table) = tag_at(&whole, ifd, TILE_OFFSETS).unwrap();
    assert_eq!(u64::from(n), big.strips);
    assert_eq!(u64::from(u32_at(&whole, table as usize + 4)), p + tile);
    assert_reads_the_same_in_pieces(&layout, &whole);
    // data.tif is never tiled (ImageJ 1.x reads no tiles).
    assert_eq!(Layout::of(&[h, w], u8s, 30).unwrap().levels[0].tile_width, None);
}

/// Planes of 16 bytes in a file of three pages: each starts on a 4 KiB
/// boundary, and the pixel bytes are each plane's run of `data.bin` and
/// the zeros up to the next page, whatever stretch is asked for.
#[test]
fn each_page_of_small_planes_starts_on_a_memory_page() {
    let u8s = (8, Sample::Unsigned);
    let layout = Layout::of(&[3, 4, 4], u8s, 4).unwrap();
    let p = layout.prefix;
    assert_eq!(layout.size, p + 3 * 4096);
    let data = |offset, len| Piece::Data { level: 0, offset, len };
    assert_eq!(
        layout.pixel_pieces(p, p + 2 * 4096 + 16),
        vec![
            data(0, 16),
            Piece::Zero(4080),
            data(16, 16),
            Piece::Zero(4080),
            data(32, 16)
        ]
    );
    // From inside a plane to inside the padding after the next.
    assert_eq!(
        layout.pixel_pieces(p + 10, p + 4096 + 20),
        vec![data(10, 6), Piece::Zero(4080), data(16, 16), Piece::Zero(4)]
    );
    // One page's file has no padding: its pixels are data.bin's.
    let one = Layout::of(&[4, 4], u8s, 4).unwrap();
    assert_eq!(one.size, one.prefix + 16);
}
