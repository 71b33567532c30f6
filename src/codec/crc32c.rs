//! `crc32c` (spec: zarr-v3/codecs/crc32c.rst): the input followed by its
//! CRC32C (RFC 3720) as a little-endian u32. Example: `{"name": "crc32c"}`.
//! Decoding verifies the checksum and strips it.

use super::CodecError;

/// Check and strip the checksum.
pub fn decode(mut input: Vec<u8>) -> Result<Vec<u8>, CodecError> {
    let Some(body_len) = input.len().checked_sub(4) else {
        return Err(CodecError::Truncated {
            codec: "crc32c",
            len: input.len(),
        });
    };
    let stored = u32::from_le_bytes(input[body_len..].try_into().expect("4 bytes"));
    let computed = ::crc32c::crc32c(&input[..body_len]);
    if stored != computed {
        return Err(CodecError::ChecksumMismatch {
            codec: "crc32c",
            stored,
            computed,
        });
    }
    input.truncate(body_len);
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3720_vector_and_mismatch() {
        // RFC 3720 B.4: 32 bytes of zeros -> 0x8a9136aa.
        let mut data = vec![0u8; 32];
        data.extend(0x8a91_36aau32.to_le_bytes());
        assert_eq!(decode(data.clone()).unwrap(), vec![0u8; 32]);
        data[0] = 1;
        assert!(matches!(decode(data), Err(CodecError::ChecksumMismatch { .. })));
        assert!(matches!(decode(vec![1, 2]), Err(CodecError::Truncated { .. })));
    }
}
