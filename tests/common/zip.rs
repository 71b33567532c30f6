//! Zip files written by hand for the tests: members stored (as `zip -0`
//! writes them) or deflated, with or without ZIP64 records.

/// A zip of `members` (stored), by hand; with `zip64`, the central
/// directory's sizes and offsets are in a ZIP64 extra field and the
/// end record points to a ZIP64 one.
pub fn zip(members: &[(&str, &[u8])], zip64: bool) -> Vec<u8> {
    zip_with(members, zip64, false)
}

/// [`zip`], its members deflated when `deflate` (not with zip64).
pub fn zip_with(members: &[(&str, &[u8])], zip64: bool, deflate: bool) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in members {
        let offset = out.len() as u32;
        let stored = if deflate {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        } else {
            data.to_vec()
        };
        let method = if deflate { 8 } else { 0 };
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend([20, 0, 0, 0, method, 0, 0, 0, 0, 0]);
        out.extend(crc32fast::hash(data).to_le_bytes());
        out.extend((stored.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&stored);
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend([45, 0, 45, 0, 0, 0, method, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let (size, off) = if zip64 {
            (0xFFFF_FFFFu32, 0xFFFF_FFFFu32)
        } else {
            (data.len() as u32, offset)
        };
        let csize = if zip64 { size } else { stored.len() as u32 };
        central.extend(csize.to_le_bytes());
        central.extend(size.to_le_bytes());
        central.extend((name.len() as u16).to_le_bytes());
        central.extend((if zip64 { 28u16 } else { 0 }).to_le_bytes());
        central.extend([0u8; 10]);
        central.extend(off.to_le_bytes());
        central.extend(name.as_bytes());
        if zip64 {
            central.extend(1u16.to_le_bytes());
            central.extend(24u16.to_le_bytes());
            central.extend((data.len() as u64).to_le_bytes());
            central.extend((data.len() as u64).to_le_bytes());
            central.extend(u64::from(offset).to_le_bytes());
        }
    }
    let dir_at = out.len() as u64;
    out.extend(&central);
    if zip64 {
        let record_at = out.len() as u64;
        out.extend(0x0606_4b50u32.to_le_bytes());
        out.extend(44u64.to_le_bytes());
        out.extend([45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend((members.len() as u64).to_le_bytes());
        out.extend((members.len() as u64).to_le_bytes());
        out.extend((central.len() as u64).to_le_bytes());
        out.extend(dir_at.to_le_bytes());
        out.extend(0x0706_4b50u32.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(record_at.to_le_bytes());
        out.extend(1u32.to_le_bytes());
    }
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    let n = if zip64 { 0xFFFF } else { members.len() as u16 };
    out.extend(n.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend((if zip64 { 0xFFFF_FFFF } else { central.len() as u32 }).to_le_bytes());
    out.extend((if zip64 { 0xFFFF_FFFF } else { dir_at as u32 }).to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}
