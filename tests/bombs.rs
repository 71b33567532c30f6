//! Decompression bombs: tiny chunk objects that claim a gigabyte or more.
//! Reading them through the filesystem core is an error, and the process
//! never allocates much more than the chunk's expected size. A counting
//! global allocator measures the peak.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::OsStr;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use nzfs::fs::{FsConfig, MissingChunks, NzFs};
use nzfs::store::FilesystemStore;
use nzfs::zarr::hierarchy::Hierarchy;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak is the whole process's: each test holds this for its whole
/// run, so that no other test's allocations (the Parquet fixture's two
/// 256 MiB values) land in its measure.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

const CHUNK: usize = 64 * 1024;
const GIB: u64 = 1 << 30;

/// A zstd frame claiming 1 GiB of content, made of RLE blocks (4 bytes per
/// 128 KiB): about 32 KiB on disk. As a single segment its window is the
/// whole 1 GiB; otherwise it declares a 128 KiB window and must be stopped
/// by the output bound.
fn zstd_bomb(single_segment: bool) -> Vec<u8> {
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    if single_segment {
        f.push(0xE0); // 8-byte Frame_Content_Size, single segment
    } else {
        f.push(0xC0); // 8-byte Frame_Content_Size
        f.push(7 << 3); // window 2^(10+7) = 128 KiB
    }
    f.extend(GIB.to_le_bytes());
    let block = 128 * 1024u32;
    let blocks = (GIB / u64::from(block)) as u32;
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = (block << 3) | (1 << 1) | last; // RLE block
        f.extend(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

/// 1024 concatenated gzip members of 1 MiB of zeros each: 1 GiB.
fn gzip_bomb() -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&vec![0u8; 1 << 20]).unwrap();
    e.finish().unwrap().repeat(1024)
}

/// A blosc container whose header claims 1 GiB.
fn blosc_bomb() -> Vec<u8> {
    let mut h = vec![2u8, 1, 0x01, 1];
    h.extend((GIB as u32).to_le_bytes()); // nbytes
    h.extend(65536u32.to_le_bytes()); // blocksize
    h.extend(64u32.to_le_bytes()); // cbytes
    h.resize(64, 0);
    h
}

/// Python's `lzma.compress(bytes(1 << 20), format=lzma.FORMAT_ALONE)` (what
/// numcodecs' LZMA writes in its legacy format) with its header's
/// dictionary size raised to the format's largest, 4 GiB - 16: the decoder
/// must not allocate the dictionary a header declares, and the 1 MiB it
/// decodes is more than the chunk.
fn lzma_alone_bomb() -> Vec<u8> {
    const BODY: &[&str] = &[
        "00006ffdffffa3b7ff473e481572396151b89228e6a38607f9eee41e82d32fc53a3c014bb17ec98a",
        "8a4d2fa30dd97fa6e38c231153e05918c5758ae277f8b6947f0c6ac0de744964e2e95c53b204d8f7",
        "440cab5f0d6d46e9e5c37688b79657acb64de1691d6ffb4b88106c42cb883f5c008fd04eaf262894",
        "711f3d8f24e1709ea7235fec28cb85d195988a7e2a91f22775f719c006984d98fdd8afd5900fc425",
        "53f8f591363105a5b0ee6fc1704d470cd19111aaad601dbaceb127185c5986e9665258bee976ac59",
        "e4e55b0508f9c7daadfcfb522af7e51cdccfffff82160000",
    ];
    let mut f = vec![0x5d];
    f.extend((!15u32).to_le_bytes()); // lzma-rust2 DICT_SIZE_MAX
    f.extend(u64::MAX.to_le_bytes()); // size unknown: up to the end marker
    f.extend(common::hex(&BODY.concat()));
    f
}

fn store_with(dir: &std::path::Path, codec: &str, bomb: &[u8]) {
    let meta = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{CHUNK}], "data_type": "uint8",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{CHUNK}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "bytes"}}, {codec}]}}"#
    );
    std::fs::create_dir_all(dir.join("a/c")).unwrap();
    std::fs::write(dir.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::write(dir.join("a/zarr.json"), meta).unwrap();
    std::fs::write(dir.join("a/c/0"), bomb).unwrap();
}

/// The filesystem core over `store` (1 MiB of cache), and the inode of
/// its array `a`'s chunk file `0.bin`.
fn first_chunk_file(store: Box<dyn nzfs::store::ReadableStore>, h: Hierarchy) -> (NzFs, u64) {
    let options = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "bomb".into(),
        uid: 0,
        gid: 0,
        mtime: SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    let fs = NzFs::new(store, h, options).unwrap();
    let dir_ino = fs.lookup(1, OsStr::new("a")).unwrap().ino;
    let ino = fs.lookup(dir_ino, OsStr::new("0.bin")).unwrap().ino;
    (fs, ino)
}

#[test]
fn bombs_fail_without_allocating_what_they_claim() {
    let _alone = alone();
    let cases = [
        (r#"{"name": "zstd", "configuration": {"level": 1}}"#, zstd_bomb(true)),
        (r#"{"name": "zstd", "configuration": {"level": 3}}"#, zstd_bomb(false)),
        (r#"{"name": "gzip", "configuration": {"level": 1}}"#, gzip_bomb()),
        (
            r#"{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "typesize": 1, "blocksize": 0}}"#,
            blosc_bomb(),
        ),
        (r#"{"name": "numcodecs.lzma", "configuration": {}}"#, lzma_alone_bomb()),
    ];
    for (codec, bomb) in cases {
        assert!(bomb.len() < 2 << 20, "the bomb itself is small");
        let dir = tempfile::tempdir().unwrap();
        store_with(dir.path(), codec, &bomb);
        drop(bomb);
        let s = FilesystemStore::new(dir.path());
        let h = Hierarchy::open(&s).unwrap();
        let (fs, ino) = first_chunk_file(Box::new(s), h);
        let before = CURRENT.load(Ordering::SeqCst);
        PEAK.store(before, Ordering::SeqCst);
        let err = fs.read(ino, 0, 4096).unwrap_err();
        let grew = PEAK.load(Ordering::SeqCst) - before;
        assert_eq!(err.errno(), libc::EIO, "{codec}");
        assert!(err.to_string().contains("a/c/0"), "{err}");
        // The stored object (read once, at most 2 x chunk + 1 MiB), the
        // output bound (chunk + 64 KiB) and decoder state: a few MiB.
        assert!(
            grew < 8 << 20,
            "{codec}: peak allocation grew by {grew} bytes for: {err}"
        );
    }
}

/// 32 equal levels of 16384² in 16 x 16 tiles: each page's block holds
/// 32 tile tables of 2^20 entries (512 MiB in all). A 4 KiB read of the
/// prefix renders only what it returns (it rendered the whole block).
#[test]
fn a_read_of_an_ome_tiff_prefix_renders_only_what_it_returns() {
    let _alone = alone();
    use nzfs::tiff::{Layout, LevelShape, Sample};
    let shape = [16384u64, 16384];
    let level = LevelShape {
        shape: &shape,
        band: 16,
        cols: Some(16),
    };
    let levels: Vec<LevelShape> = (0..32).map(|_| LevelShape { ..level }).collect();
    let layout = Layout::pyramid(&levels, (8, Sample::Unsigned), Some("an OME-XML document")).unwrap();
    assert!(layout.prefix > 256 << 20, "{}", layout.prefix);
    let mut out = vec![0u8; 4096];
    let before = CURRENT.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    layout.read_prefix(layout.prefix / 2, &mut out);
    let grew = PEAK.load(Ordering::SeqCst) - before;
    assert!(grew < 64 << 20, "a 4 KiB read allocated {} MiB", grew >> 20);
    // The bytes are the block's: every table entry there is an offset into
    // the pixels or a tile's size, never zero.
    assert!(out.iter().any(|&b| b != 0));
}

/// A kerchunk Parquet reference set whose one record file is a few KB of
/// zstd pages that declare (and hold) two inline chunks of 256 MiB each.
/// Reading a chunk of it is EIO naming the record file, and the reader
/// never decompresses the pages: it allocated 512 MiB and more.
#[test]
fn a_parquet_record_that_expands_is_refused_before_its_pages_are_decompressed() {
    let _alone = alone();
    use nzfs::cli::StoreArgs;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("bomb.parq");
    std::fs::create_dir_all(set.join("a")).unwrap();
    std::fs::write(
        set.join(".zmetadata"),
        r#"{"metadata": {".zgroup": {"zarr_format": 2}, ".zattrs": {},
            "a/.zarray": {"shape": [128], "chunks": [64], "dtype": "|u1", "fill_value": 0,
                          "order": "C", "filters": null, "compressor": null, "zarr_format": 2},
            "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]}},
            "record_size": 10}"#,
    )
    .unwrap();
    let schema = parquet::schema::parser::parse_message_type(
        "message schema { OPTIONAL BYTE_ARRAY path (UTF8); REQUIRED INT64 offset; \
         REQUIRED INT64 size; OPTIONAL BYTE_ARRAY raw; }",
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::None)
        .build();
    let file = std::fs::File::create(set.join("a/refs.0.parq")).unwrap();
    let mut w = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap();
    let mut group = w.next_row_group().unwrap();
    let mut column = 0;
    while let Some(mut c) = group.next_column().unwrap() {
        match column {
            0 => c.typed::<ByteArrayType>().write_batch(&[], Some(&[0, 0]), None),
            1 | 2 => c.typed::<Int64Type>().write_batch(&[0, 0], None, None),
            _ => {
                let big = || ByteArray::from(vec![0u8; 256 << 20]);
                c.typed::<ByteArrayType>()
                    .write_batch(&[big(), big()], Some(&[1, 1]), None)
            }
        }
        .unwrap();
        c.close().unwrap();
        column += 1;
    }
    group.close().unwrap();
    w.close().unwrap();
    let written = std::fs::metadata(set.join("a/refs.0.parq")).unwrap().len();
    assert!(written < 1 << 20, "the record file itself is small: {written} bytes");

    // Measured from the mount's start: a lookup may read the record.
    let before = CURRENT.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let opened = nzfs::open::open(&StoreArgs::default().source(&set).unwrap()).unwrap();
    let (fs, ino) = first_chunk_file(opened.store, opened.hierarchy);
    let err = fs.read(ino, 0, 64).unwrap_err();
    let grew = PEAK.load(Ordering::SeqCst) - before;
    assert_eq!(err.errno(), libc::EIO, "{err}");
    assert!(err.to_string().contains("refs.0.parq"), "{err}");
    // The record file (a few KB) and the reader's state: no page.
    assert!(grew < 8 << 20, "peak allocation grew by {} MiB for: {err}", grew >> 20);
    assert!(err.to_string().contains("pages declare"), "{err}");
}
