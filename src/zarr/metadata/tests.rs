use super::*;

const BASE: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [10, 4],
    "data_type": "float32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 4]}},
    "chunk_key_encoding": {"name": "default"},
    "fill_value": "NaN", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
    EXTRA}"#;

fn array(extra: &str) -> Result<ArrayMetadata, MetadataError> {
    match NodeMetadata::parse(BASE.replace("EXTRA", extra).as_bytes())? {
        NodeMetadata::Array(a) => Ok(*a),
        NodeMetadata::Group(_) => panic!("not an array"),
    }
}

#[test]
fn minimal_array() {
    let a = array("").unwrap();
    assert_eq!(a.grid_shape(), [4, 1]);
    assert_eq!(a.chunk_bytes(), 48);
    assert_eq!(a.dimension_names, [None, None]);
}

#[test]
fn must_understand_rules() {
    assert_eq!(
        array(r#", "future": 1"#).unwrap_err(),
        MetadataError::UnknownField("future".into())
    );
    assert!(array(r#", "future": {"must_understand": true}"#).is_err());
    assert!(array(r#", "future": {"must_understand": false, "x": 1}"#).is_ok());
    assert!(array(r#", "storage_transformers": []"#).is_ok());
    assert!(matches!(
        array(r#", "storage_transformers": [{"name": "magic"}]"#),
        Err(MetadataError::Unsupported { .. })
    ));
}

#[test]
fn hostile_sizes_are_refused() {
    let huge = BASE.replace("[3, 4]", "[4294967296, 4294967296]").replace("EXTRA", "");
    assert!(matches!(
        NodeMetadata::parse(huge.as_bytes()),
        Err(MetadataError::ChunkTooLarge(_))
    ));
    let zero = BASE.replace("[3, 4]", "[0, 4]").replace("EXTRA", "");
    assert!(NodeMetadata::parse(zero.as_bytes()).is_err());
    let many = BASE
        .replace("[10, 4]", "[18446744073709551615, 18446744073709551615]")
        .replace("[3, 4]", "[1, 1]")
        .replace("EXTRA", "");
    assert!(NodeMetadata::parse(many.as_bytes()).is_err());
}

#[test]
fn groups_and_wrong_documents() {
    let g = NodeMetadata::parse(br#"{"zarr_format": 3, "node_type": "group", "attributes": {"a": NaN}}"#);
    assert!(matches!(g, Ok(NodeMetadata::Group(_))));
    assert!(matches!(
        NodeMetadata::parse(br#"{"zarr_format": 2, "node_type": "group"}"#),
        Err(MetadataError::WrongFormat(_))
    ));
    assert!(matches!(NodeMetadata::parse(b"[1]"), Err(MetadataError::NotAnObject)));
    assert!(matches!(
        NodeMetadata::parse(b"{\"zarr_format\": 3"),
        Err(MetadataError::Json(_))
    ));
}
