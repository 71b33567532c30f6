use std::io::Write;

use super::*;

/// A CDF-1 file: one fixed `short` variable `v(x)` of 3 values, one global
/// text attribute, and `extra` bytes after the header's declared counts
/// replaced by what a test wants.
fn cdf1(numrecs: u32, dims: &[(&str, u32)], vars: &[(&str, &[u32], u32, u32)], data: &[u8]) -> Vec<u8> {
    let mut b = b"CDF\x01".to_vec();
    let name = |b: &mut Vec<u8>, s: &str| {
        b.extend((s.len() as u32).to_be_bytes());
        b.extend(s.as_bytes());
        b.extend(vec![0u8; (4 - s.len() % 4) % 4]);
    };
    b.extend(numrecs.to_be_bytes());
    b.extend(0x0Au32.to_be_bytes());
    b.extend((dims.len() as u32).to_be_bytes());
    for (n, len) in dims {
        name(&mut b, n);
        b.extend(len.to_be_bytes());
    }
    // Global attributes: title = "hi".
    b.extend(0x0Cu32.to_be_bytes());
    b.extend(1u32.to_be_bytes());
    name(&mut b, "title");
    b.extend(2u32.to_be_bytes());
    b.extend(2u32.to_be_bytes());
    b.extend(b"hi\0\0");
    b.extend(0x0Bu32.to_be_bytes());
    b.extend((vars.len() as u32).to_be_bytes());
    for (n, ids, t, begin) in vars {
        name(&mut b, n);
        b.extend((ids.len() as u32).to_be_bytes());
        for id in *ids {
            b.extend(id.to_be_bytes());
        }
        b.extend([0u8; 8]);
        b.extend(t.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(begin.to_be_bytes());
    }
    b.extend(data);
    b
}

fn file(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    let opened = File::open(f.path()).unwrap();
    (f, opened)
}

#[test]
fn a_fixed_and_a_record_variable_read_back_by_region() {
    // x = 3 (fixed), t unlimited with 2 records; v(x) short; r(t, x) byte.
    let header_len = cdf1(
        2,
        &[("x", 3), ("t", 0)],
        &[("v", &[0], 3, 0), ("r", &[1, 0], 1, 0)],
        &[],
    )
    .len() as u32;
    let v_at = header_len;
    let r_at = v_at + 8; // 3 shorts, padded to 8
    let mut data = vec![0, 1, 0, 2, 0, 3, 0, 0];
    data.extend([10, 11, 12]); // record 0 of r (one record variable: no padding)
    data.extend([20, 21, 22]);
    let bytes = cdf1(
        2,
        &[("x", 3), ("t", 0)],
        &[("v", &[0], 3, v_at), ("r", &[1, 0], 1, r_at)],
        &data,
    );
    let (_keep, f) = file(&bytes);
    let c = Classic::parse(&f).unwrap();
    assert_eq!(c.format, Format::Classic);
    assert_eq!(c.unlimited, Some(1));
    assert_eq!(c.dims[1].len, 2);
    assert_eq!(c.attrs[0].name, "title");
    assert_eq!(c.attrs[0].raw, b"hi");
    let v = &c.vars[0];
    assert_eq!(c.read(&f, v, &[0], &[3]).unwrap(), [0, 1, 0, 2, 0, 3]);
    assert_eq!(c.read(&f, v, &[1], &[2]).unwrap(), [0, 2, 0, 3]);
    let r = &c.vars[1];
    assert!(r.record);
    assert_eq!(c.shape(r), [2, 3]);
    assert_eq!(c.read(&f, r, &[0, 0], &[2, 3]).unwrap(), [10, 11, 12, 20, 21, 22]);
    assert_eq!(c.read(&f, r, &[1, 1], &[1, 2]).unwrap(), [21, 22]);
    assert_eq!(c.read(&f, r, &[0, 2], &[2, 1]).unwrap(), [12, 22]);
}

#[test]
fn other_formats_and_hostile_headers_are_refused_before_any_allocation() {
    let (_k, f) = file(b"\x89HDF\r\n\x1a\n");
    let e = Classic::parse(&f).unwrap_err().to_string();
    assert!(e.contains("HDF5") && e.contains("classic"), "{e}");
    let (_k, f) = file(b"CD");
    assert!(matches!(Classic::parse(&f), Err(ClassicError::NotClassic(_))));
    // A dimension list that claims 2^32 - 1 entries in a 20-byte file.
    let mut b = b"CDF\x01\0\0\0\0\0\0\0\x0A\xff\xff\xff\xff".to_vec();
    b.extend([0u8; 4]);
    let (_k, f) = file(&b);
    let e = Classic::parse(&f).unwrap_err().to_string();
    assert!(e.contains("entries"), "{e}");
    // A name that claims 4 GiB.
    let mut b = b"CDF\x01\0\0\0\0\0\0\0\x0A\0\0\0\x01\xff\xff\xff\xf0".to_vec();
    b.extend([0u8; 16]);
    let (_k, f) = file(&b);
    let e = Classic::parse(&f).unwrap_err().to_string();
    assert!(e.contains("runs past"), "{e}");
    // A variable whose data lies past the end.
    let bytes = cdf1(0, &[("x", 1000)], &[("v", &[0], 6, 64)], &[]);
    let (_k, f) = file(&bytes);
    let e = Classic::parse(&f).unwrap_err().to_string();
    assert!(e.contains("variable v") && e.contains("past the file"), "{e}");
    // A dimension id out of range, and a CDF-5 type in CDF-1.
    let bytes = cdf1(0, &[("x", 1)], &[("v", &[7], 6, 0)], &[0; 8]);
    let (_k, f) = file(&bytes);
    assert!(Classic::parse(&f).unwrap_err().to_string().contains("dimension id 7"));
    let bytes = cdf1(0, &[("x", 1)], &[("v", &[0], 10, 0)], &[0; 8]);
    let (_k, f) = file(&bytes);
    assert!(Classic::parse(&f).unwrap_err().to_string().contains("outside CDF-5"));
}

#[test]
fn a_streamed_file_counts_the_records_it_holds() {
    let len = cdf1(0, &[("t", 0)], &[("r", &[0], 4, 0)], &[]).len() as u32;
    let bytes = cdf1(
        u32::MAX,
        &[("t", 0)],
        &[("r", &[0], 4, len)],
        &[0, 0, 0, 1, 0, 0, 0, 2, 9],
    );
    let (_k, f) = file(&bytes);
    let c = Classic::parse(&f).unwrap();
    assert_eq!(c.dims[0].len, 2);
    assert_eq!(c.read(&f, &c.vars[0], &[0], &[2]).unwrap(), [0, 0, 0, 1, 0, 0, 0, 2]);
}

#[test]
fn variables_that_share_bytes_are_refused() {
    // Two doubles of x (4 values, 32 bytes each) at the same offset.
    let header = cdf1(0, &[("x", 4)], &[("a", &[0], 6, 0), ("b", &[0], 6, 0)], &[]).len() as u32;
    let at = header; // the data follows the header
    let bytes = cdf1(0, &[("x", 4)], &[("a", &[0], 6, at), ("b", &[0], 6, at + 16)], &[0; 64]);
    let (_k, f) = file(&bytes);
    let e = Classic::parse(&f).unwrap_err().to_string();
    assert!(e.contains("share bytes") && e.contains("a and b"), "{e}");
    // Apart, they are taken.
    let bytes = cdf1(0, &[("x", 4)], &[("a", &[0], 6, at), ("b", &[0], 6, at + 32)], &[0; 64]);
    let (_k, f) = file(&bytes);
    Classic::parse(&f).unwrap();
}

#[test]
fn the_only_record_variable_reads_back_across_records_whole() {
    // t unlimited with 5 records of one byte each, the only record
    // variable: its records lie one after the other.
    let header_len = cdf1(5, &[("t", 0)], &[("r", &[0], 1, 0)], &[]).len() as u32;
    let bytes = cdf1(5, &[("t", 0)], &[("r", &[0], 1, header_len)], &[1, 2, 3, 4, 5, 0, 0, 0]);
    let (_keep, f) = file(&bytes);
    let c = Classic::parse(&f).unwrap();
    let r = &c.vars[0];
    assert_eq!(c.read(&f, r, &[0], &[5]).unwrap(), [1, 2, 3, 4, 5]);
    assert_eq!(c.read(&f, r, &[1], &[3]).unwrap(), [2, 3, 4]);
    assert_eq!(c.read(&f, r, &[4], &[1]).unwrap(), [5]);
}
