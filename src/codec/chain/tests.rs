//! The chain's order rules, decoding of composed stages, and encoding's
//! round trip and refusals.

use super::*;
use crate::json::parse;

fn spec(name: &str, config: Option<&str>, must_understand: bool) -> CodecSpec {
    CodecSpec {
        name: name.into(),
        configuration: config.map(|c| parse(c.as_bytes()).unwrap()),
        must_understand,
    }
}

#[test]
fn transpose_bytes_zstd_crc() {
    // A = [[1, 2, 3], [4, 5, 6]] as big-endian u16, stored transposed.
    let b: Vec<u8> = [1u16, 4, 2, 5, 3, 6].iter().flat_map(|v| v.to_be_bytes()).collect();
    let mut enc = ::zstd::encode_all(&b[..], 1).unwrap();
    enc.extend(::crc32c::crc32c(&enc).to_le_bytes());
    let chain = CodecChain::new(
        &[
            spec("transpose", Some(r#"{"order": [1, 0]}"#), true),
            spec("bytes", Some(r#"{"endian": "big"}"#), true),
            spec("zstd", Some(r#"{"level": 1}"#), true),
            spec("crc32c", None, true),
        ],
        &[2, 3],
        DataType::UInt16,
        &FillValue(vec![0, 0]),
    )
    .unwrap();
    let want: Vec<u8> = (1u16..=6).flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(chain.decode(enc).unwrap(), want);
}

/// zarr-extensions' `bitround`, on floats and integers:
/// the stored values are already rounded, decoding keeps them.
#[test]
fn bitround_decodes_to_the_stored_values() {
    for (dt, stored) in [
        (
            DataType::Float32,
            [1.5f32, -2.25]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
        (
            DataType::Int16,
            [1024i16, -8].iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    ] {
        let chain = CodecChain::new(
            &[
                spec("bitround", Some(r#"{"keepbits": 3}"#), true),
                spec("bytes", Some(r#"{"endian": "little"}"#), true),
            ],
            &[2],
            dt.clone(),
            &FillValue(vec![0; dt.size()]),
        )
        .unwrap();
        let want: Vec<u8> = stored
            .chunks(dt.size())
            .flat_map(|c| {
                let mut c = c.to_vec();
                if cfg!(target_endian = "big") {
                    c.reverse();
                }
                c
            })
            .collect();
        assert_eq!(chain.decode(stored.clone()).unwrap(), want, "{dt:?}");
    }
}

#[test]
fn order_and_unknown_codecs() {
    let bytes = spec("bytes", None, true);
    assert!(
        CodecChain::new(
            &[spec("zstd", None, true), bytes.clone()],
            &[4],
            DataType::UInt8,
            &FillValue(vec![0])
        )
        .is_err()
    );
    assert!(
        CodecChain::new(
            &[bytes.clone(), spec("transpose", Some(r#"{"order": [0]}"#), true)],
            &[4],
            DataType::UInt8,
            &FillValue(vec![0])
        )
        .is_err()
    );
    assert!(CodecChain::new(&[spec("zstd", None, true)], &[4], DataType::UInt8, &FillValue(vec![0])).is_err());
    assert!(matches!(
        CodecChain::new(
            &[bytes.clone(), spec("magic", None, true)],
            &[4],
            DataType::UInt8,
            &FillValue(vec![0])
        ),
        Err(MetadataError::Unsupported { .. })
    ));
    let chain = CodecChain::new(
        &[bytes, spec("magic", None, false)],
        &[4],
        DataType::UInt8,
        &FillValue(vec![0]),
    )
    .unwrap();
    assert_eq!(chain.decode(vec![1, 2, 3, 4]).unwrap(), [1, 2, 3, 4]);
}

/// The chains the mount writes into decode, through the same chain, to
/// the chunk that was encoded; each other chain is refused with the
/// codec named.
#[test]
fn encoded_chunks_decode_to_themselves() {
    let chain = |codecs: &str| {
        let specs: Vec<CodecSpec> = match parse(codecs.as_bytes()).unwrap() {
            crate::json::Value::Array(items) => items
                .iter()
                .map(|c| CodecSpec {
                    name: c.get("name").and_then(|n| n.as_str()).unwrap().into(),
                    configuration: c.get("configuration").cloned(),
                    must_understand: !matches!(c.get("must_understand"), Some(crate::json::Value::Bool(false))),
                })
                .collect(),
            other => panic!("{other}"),
        };
        CodecChain::new(&specs, &[4, 3], DataType::Float32, &FillValue(vec![0; 4])).unwrap()
    };
    let chunk: Vec<u8> = (0..12).flat_map(|i| (i as f32 * 1.5).to_ne_bytes()).collect();
    for c in [
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
        r#"[{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]"#,
        r#"[{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]"#,
        r#"[{"name": "reshape", "configuration": {"shape": [12]}}, {"name": "bytes", "configuration": {"endian": "big"}}]"#,
    ] {
        let chain = chain(c);
        assert_eq!(chain.encodable(), Ok(()), "{c}");
        let encoded = chain.encode(chunk.clone()).unwrap();
        assert_eq!(chain.decode(encoded).unwrap(), chunk, "{c}");
    }
    // Big-endian bytes, transposed: the stored layout itself.
    let stored = chain(r#"[{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}]"#)
        .encode(chunk.clone())
        .unwrap();
    let want: Vec<u8> = (0..3)
        .flat_map(|j| (0..4).map(move |i| i * 3 + j))
        .flat_map(|k| (k as f32 * 1.5).to_be_bytes())
        .collect();
    assert_eq!(stored, want);
    for (c, named) in [
        (
            r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]"#,
            "blosc",
        ),
        (
            r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]"#,
            "sharding_indexed",
        ),
        (
            r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "magic", "must_understand": false}]"#,
            "magic",
        ),
    ] {
        let chain = chain(c);
        let why = chain.encodable().unwrap_err();
        assert!(
            matches!(&why, EncodeError::NotEncodable { codec, .. } if codec == named),
            "{why}"
        );
        assert_eq!(chain.encode(chunk.clone()), Err(why));
    }
}
