//! `crc32c` (spec: zarr-v3/codecs/crc32c.rst): the input followed by its
//! CRC32C (RFC 3720) as a little-endian u32. Example: `{"name": "crc32c"}`.
//! Decoding verifies the checksum and strips it; encoding appends it.

use super::CodecError;

/// Append the checksum of `input`.
pub fn encode(mut input: Vec<u8>) -> Vec<u8> {
    let sum = ::crc32c::crc32c(&input);
    input.extend_from_slice(&sum.to_le_bytes());
    input
}

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

    proptest::proptest! {
        /// `decode` strips what `encode` appends.
        #[test]
        fn decode_undoes_encode(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096)) {
            proptest::prop_assert_eq!(decode(encode(data.clone())).unwrap(), data);
        }
    }
}
