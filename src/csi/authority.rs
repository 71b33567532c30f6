//! An HTTP/2 relay in front of the plugin's gRPC server that makes every
//! request's `:authority` one the server accepts.
//!
//! Clients that dial a unix socket send what they like as `:authority`:
//! grpcio, `csc`, the secrets-store driver and kubelets before 1.26 send
//! the socket's path, which is no URI authority. hyper's HTTP/2 server
//! (h2) answers such a request with RST_STREAM (PROTOCOL_ERROR), where Go
//! and C++ servers accept it. The relay reads the client's frames, decodes
//! each header block (HPACK, with the client's dynamic table), replaces an
//! `:authority` that does not parse as one with `localhost`, and writes the
//! block again as literals that touch no dynamic table (so the server's
//! decoder state never depends on the relay's). Every other frame, and
//! everything the server sends, passes as it is.
//!
//! Invariants: a header block is held whole only up to
//! [`MAX_HEADER_BLOCK`] bytes and a frame up to the protocol's 2^24 - 1; a
//! malformed preface, frame sequence or header block closes the
//! connection, which the server would have refused too.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// HTTP/2's connection preface (RFC 9113, 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// The largest header block the relay holds (h2's own default limit on a
/// header list is 16 KiB).
pub const MAX_HEADER_BLOCK: usize = 256 << 10;

/// The largest frame payload the relay writes: every server accepts 16 KiB
/// (SETTINGS_MAX_FRAME_SIZE's initial value).
const FRAME_OUT: usize = 16 << 10;

/// What `:authority` becomes when the client's is not an authority.
const STAND_IN: &[u8] = b"localhost";

fn bad(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.into())
}

/// Relay `client` to `server` and back until either side closes.
pub async fn relay<C, S>(client: C, server: S)
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let (mut server_r, mut server_w) = tokio::io::split(server);
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_r, &mut client_w).await;
        let _ = client_w.shutdown().await;
    });
    if let Err(e) = forward(&mut client_r, &mut server_w).await {
        tracing::debug!(error = %e, "CSI connection closed");
    }
    let _ = server_w.shutdown().await;
    let _ = back.await;
}

/// One frame's header: payload length, type, flags, stream.
struct FrameHead {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

async fn read_head<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<Option<FrameHead>> {
    let mut h = [0u8; 9];
    match r.read_exact(&mut h).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    Ok(Some(FrameHead {
        len: usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]),
        kind: h[3],
        flags: h[4],
        stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
    }))
}

fn head_bytes(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; 9] {
    let s = stream.to_be_bytes();
    [
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
        kind,
        flags,
        s[0],
        s[1],
        s[2],
        s[3],
    ]
}

/// The header block fragment of a HEADERS frame's payload (padding and
/// priority fields removed).
fn fragment(payload: &[u8], flags: u8) -> io::Result<&[u8]> {
    let mut start = 0;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = usize::from(
            *payload
                .first()
                .ok_or_else(|| bad("a padded frame without its pad length"))?,
        );
        start = 1;
    }
    if flags & PRIORITY != 0 {
        start += 5;
    }
    let end = payload
        .len()
        .checked_sub(pad)
        .filter(|&e| e >= start)
        .ok_or_else(|| bad("padding longer than the frame"))?;
    Ok(&payload[start..end])
}

async fn forward<R, W>(client: &mut R, server: &mut W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut preface = [0u8; 24];
    client.read_exact(&mut preface).await?;
    if &preface != PREFACE {
        return Err(bad("not an HTTP/2 connection preface"));
    }
    server.write_all(&preface).await?;
    let mut decoder = loona_hpack::Decoder::new();
    let mut payload = Vec::new();
    while let Some(head) = read_head(client).await? {
        payload.resize(head.len, 0);
        client.read_exact(&mut payload).await?;
        if head.kind != HEADERS {
            server
                .write_all(&head_bytes(head.len, head.kind, head.flags, head.stream))
                .await?;
            server.write_all(&payload).await?;
            continue;
        }
        let mut block = fragment(&payload, head.flags)?.to_vec();
        let mut flags = head.flags;
        while flags & END_HEADERS == 0 {
            let next = read_head(client)
                .await?
                .ok_or_else(|| bad("a header block cut short"))?;
            if next.kind != CONTINUATION || next.stream != head.stream {
                return Err(bad("a header block interrupted by another frame"));
            }
            if block.len() + next.len > MAX_HEADER_BLOCK {
                return Err(bad(format!("a header block over {MAX_HEADER_BLOCK} bytes")));
            }
            let at = block.len();
            block.resize(at + next.len, 0);
            client.read_exact(&mut block[at..]).await?;
            flags = (flags & !END_HEADERS) | (next.flags & END_HEADERS);
        }
        let rewritten = rewrite(&mut decoder, &block)?;
        write_headers(server, &rewritten, head.flags & END_STREAM, head.stream).await?;
    }
    Ok(())
}

/// A header block decoded, its `:authority` made acceptable, and encoded
/// again as literals without indexing.
pub fn rewrite(decoder: &mut loona_hpack::Decoder<'_>, block: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(block.len() + 16);
    let mut failed = None;
    decoder
        .decode_with_cb(block, |name, value| {
            let value: &[u8] = if &*name == b":authority" && http::uri::Authority::try_from(&*value).is_err() {
                STAND_IN
            } else {
                &value
            };
            for (i, s) in [&*name, value].into_iter().enumerate() {
                if i == 0 {
                    // Literal header field without indexing, new name.
                    out.push(0);
                }
                if let Err(e) = loona_hpack::encoder::encode_integer_into(s.len(), 7, 0, &mut out) {
                    failed = Some(e);
                }
                out.extend_from_slice(s);
            }
        })
        .map_err(|e| bad(format!("a header block HPACK cannot decode: {e:?}")))?;
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A header block as HEADERS and, past [`FRAME_OUT`], CONTINUATION frames.
async fn write_headers<W: AsyncWrite + Unpin>(w: &mut W, block: &[u8], end_stream: u8, stream: u32) -> io::Result<()> {
    let mut pieces = block.chunks(FRAME_OUT).peekable();
    let mut kind = HEADERS;
    let mut flags = end_stream;
    if pieces.peek().is_none() {
        return w
            .write_all(&head_bytes(0, HEADERS, end_stream | END_HEADERS, stream))
            .await;
    }
    while let Some(piece) = pieces.next() {
        if pieces.peek().is_none() {
            flags |= END_HEADERS;
        }
        w.write_all(&head_bytes(piece.len(), kind, flags, stream)).await?;
        w.write_all(piece).await?;
        kind = CONTINUATION;
        flags = 0;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        loona_hpack::Decoder::new().decode(block).unwrap()
    }

    /// A path as `:authority` becomes `localhost`; a real authority and
    /// every other header stay, through the client's dynamic table.
    #[test]
    fn only_an_authority_that_is_none_is_replaced() {
        let mut enc = loona_hpack::Encoder::new();
        let mut dec = loona_hpack::Decoder::new();
        let path: &[(&[u8], &[u8])] = &[
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", b"/csi.v1.Identity/Probe"),
            (b":authority", b"/var/lib/kubelet/plugins/nzfs/csi.sock"),
            (b"te", b"trailers"),
        ];
        for _ in 0..2 {
            // The second time, the client's encoder indexes from its table.
            let got = decoded(&rewrite(&mut dec, &enc.encode(path.iter().copied())).unwrap());
            let authority = got.iter().find(|(n, _)| n == b":authority").unwrap();
            assert_eq!(authority.1, b"localhost");
            assert_eq!(got.len(), 5);
            assert_eq!(got[2], (b":path".to_vec(), b"/csi.v1.Identity/Probe".to_vec()));
        }
        let fine: &[(&[u8], &[u8])] = &[(b":authority", b"localhost:50051")];
        let got = decoded(&rewrite(&mut dec, &enc.encode(fine.iter().copied())).unwrap());
        assert_eq!(got[0].1, b"localhost:50051");
        assert!(rewrite(&mut dec, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    /// Any bytes as a header block: an error or a block, never a panic
    /// (100,000 blocks from a fixed-seed generator, with a decoder whose
    /// dynamic table carries over between them as a connection's does).
    #[test]
    fn hostile_header_blocks_are_errors() {
        let mut dec = loona_hpack::Decoder::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for n in 0..100_000usize {
            let len = n % 48;
            let block: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if rewrite(&mut dec, &block).is_err() && n % 7 == 0 {
                dec = loona_hpack::Decoder::new();
            }
        }
    }

    #[test]
    fn padding_and_priority_are_taken_off() {
        assert_eq!(fragment(b"abc", 0).unwrap(), b"abc");
        assert_eq!(fragment(b"\x02abcxx", PADDED).unwrap(), b"abc");
        assert_eq!(fragment(b"\x00\x00\x00\x01\x10abc", PRIORITY).unwrap(), b"abc");
        assert!(fragment(b"\x09abc", PADDED).is_err());
        assert!(fragment(b"", PADDED).is_err());
    }
}
