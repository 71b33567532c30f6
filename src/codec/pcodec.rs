//! `numcodecs.pcodec` (numcodecs' `PCodec`, pcodec's standalone
//! format): an array -> bytes codec for numbers, decoded with the `pco`
//! crate (pcodec's own Rust implementation, which the Python package wraps).
//! Example: `{"name": "numcodecs.pcodec", "configuration": {"level": 8}}`
//! (the configuration only steers compression).
//!
//! Invariant: decoding writes into a buffer of exactly the chunk's element
//! count, so a stream that claims more values cannot allocate more; a
//! stream with fewer, or more, is an error.

use super::CodecError;
use crate::zarr::data_type::DataType;

/// Whether pcodec can hold `dt`.
pub fn supports(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float16
            | DataType::Float32
            | DataType::Float64
    )
}

fn decode_as<T: pco::data_types::Number + Default>(input: &[u8], elements: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |reason: String| CodecError::Corrupt {
        codec: "numcodecs.pcodec",
        reason,
    };
    let mut values = vec![T::default(); elements];
    let progress = pco::standalone::simple_decompress_into(input, &mut values).map_err(|e| corrupt(e.to_string()))?;
    if progress.n_processed != elements || !progress.finished {
        return Err(corrupt(format!(
            "{} values{}, expected {elements}",
            progress.n_processed,
            if progress.finished { "" } else { " and more" }
        )));
    }
    let size = std::mem::size_of::<T>();
    let mut out = vec![0u8; elements * size];
    // SAFETY: `values` holds `elements` plain numbers (no padding, any bit
    // pattern valid), and `out` has exactly their size in bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), out.as_mut_ptr(), out.len());
    }
    Ok(out)
}

/// Decode one chunk of `elements` values of `dt` (native byte order).
pub fn decode(input: &[u8], dt: &DataType, elements: usize) -> Result<Vec<u8>, CodecError> {
    match dt {
        DataType::Int8 => decode_as::<i8>(input, elements),
        DataType::Int16 => decode_as::<i16>(input, elements),
        DataType::Int32 => decode_as::<i32>(input, elements),
        DataType::Int64 => decode_as::<i64>(input, elements),
        DataType::UInt8 => decode_as::<u8>(input, elements),
        DataType::UInt16 => decode_as::<u16>(input, elements),
        DataType::UInt32 => decode_as::<u32>(input, elements),
        DataType::UInt64 => decode_as::<u64>(input, elements),
        DataType::Float16 => decode_as::<half::f16>(input, elements),
        DataType::Float32 => decode_as::<f32>(input, elements),
        DataType::Float64 => decode_as::<f64>(input, elements),
        other => Err(CodecError::Corrupt {
            codec: "numcodecs.pcodec",
            reason: format!("{} is not a pcodec type", other.name()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_wrong_counts() {
        let values: Vec<f32> = (0..1000).map(|i| (i as f32).sin()).collect();
        let stored = pco::standalone::simple_compress(&values, &pco::ChunkConfig::default()).unwrap();
        let want: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(decode(&stored, &DataType::Float32, 1000).unwrap(), want);
        assert!(
            decode(&stored, &DataType::Float32, 999).is_err(),
            "more values than the chunk"
        );
        assert!(decode(&stored, &DataType::Float32, 1001).is_err(), "fewer");
        assert!(decode(&stored[..stored.len() / 2], &DataType::Float32, 1000).is_err());
        assert!(decode(b"garbage", &DataType::Int32, 4).is_err());
    }
}
