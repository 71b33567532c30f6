//! The PNG writer of previews: 8-bit RGBA, its image data in stored
//! (uncompressed) deflate blocks, so that a PNG's length follows from its
//! size and text chunks alone (see [`super::Plan::png_len`]).

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    b << 16 | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let at = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32fast::hash(&out[at..]);
    out.extend(crc.to_be_bytes());
}

/// `t` as tEXt holds it: Latin-1, one byte a character (others `?`).
fn latin1(t: &str) -> Vec<u8> {
    t.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).collect()
}

/// An 8-bit RGBA PNG of `raw` scanlines (filter bytes included), its image
/// data in stored deflate blocks, with `tEXt` chunks.
pub fn encode(width: u32, height: u32, texts: &[(&str, String)], raw: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 6, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    for (k, t) in texts {
        chunk(&mut out, b"tEXt", &[k.as_bytes(), &[0], &latin1(t)].concat());
    }
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if raw.is_empty() {
        vec![&[][..]]
    } else {
        raw.chunks(65535).collect()
    };
    for (i, block) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        z.extend(len.to_le_bytes());
        z.extend((!len).to_le_bytes());
        z.extend(*block);
    }
    z.extend(adler32(raw).to_be_bytes());
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}
