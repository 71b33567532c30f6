use super::*;

#[test]
fn chunks_hold_at_most_4_mib_halving_the_leading_dimensions_first() {
    assert_eq!(chunk_shape(&[10, 20], 4), [10, 20]);
    assert_eq!(chunk_shape(&[], 8), Vec::<u64>::new());
    assert_eq!(chunk_shape(&[0, 5], 4), [1, 5]);
    // 1000 x 1000 float64 = 8 MB: the first dimension halves once.
    assert_eq!(chunk_shape(&[1000, 1000], 8), [500, 1000]);
    // A first dimension of 1 is passed over.
    assert_eq!(chunk_shape(&[1, 3, 2048, 2048], 4), [1, 1, 512, 2048]);
    for (shape, size) in [(vec![365u64, 721, 1440], 4u64), (vec![7, 3, 5, 1 << 22], 2)] {
        let c = chunk_shape(&shape, size);
        assert!(c.iter().product::<u64>() * size <= CHUNK_BYTES, "{shape:?}: {c:?}");
    }
}

#[test]
fn an_edge_chunk_is_its_values_in_place_and_the_fill_around_them() {
    // A 2 x 3 region of big-endian int16 in a 3 x 4 chunk, fill 0x0102.
    let values: Vec<u8> = (1..=6u16).flat_map(|v| v.to_be_bytes()).collect();
    let out = whole_chunk(values, &[2, 3], &[3, 4], 2, &[2, 1], true);
    let got: Vec<u16> = out.chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    assert_eq!(got, [1, 2, 3, 0x0102, 4, 5, 6, 0x0102, 0x0102, 0x0102, 0x0102, 0x0102]);
    // A whole chunk is swapped only.
    assert_eq!(
        whole_chunk(vec![0, 1, 0, 2], &[2], &[2], 2, &[0, 0], true),
        [1, 0, 2, 0]
    );
    // Text stays as it is.
    assert_eq!(
        whole_chunk(b"abcd".to_vec(), &[1], &[2], 4, &[0; 4], false),
        b"abcd\0\0\0\0"
    );
}

#[test]
fn an_edge_chunk_of_strings_is_its_lines_in_place_and_empty_strings_around_them() {
    // A 2 x 1 region of a 3 x 2 chunk.
    assert_eq!(whole_text_chunk(b"a\nb\\n\n", &[2, 1], &[3, 2]), b"a\n\nb\\n\n\n\n\n");
    assert_eq!(whole_text_chunk(b"x\ny\n", &[2], &[2]), b"x\ny\n");
    assert_eq!(whole_text_chunk(b"x\n", &[1], &[3]), b"x\n\n\n");
}

#[test]
fn attributes_and_fills_are_written_as_nz_reads_them() {
    let text = Attr {
        name: "units".into(),
        nc_type: NcType::Char,
        count: 2,
        raw: b"K\0".to_vec(),
    };
    assert_eq!(attribute(&text), Value::Str("K".into()));
    let floats = Attr {
        name: "valid_range".into(),
        nc_type: NcType::Float,
        count: 2,
        raw: [0.1f32, 2.5].iter().flat_map(|v| v.to_be_bytes()).collect(),
    };
    assert_eq!(attribute(&floats).to_string(), "[0.1,2.5]");
    assert_eq!(
        NcType::Float.decode(&f32::NAN.to_be_bytes(), true),
        Value::Str("NaN".into())
    );
    assert_eq!(
        NcType::UInt64.decode(&u64::MAX.to_be_bytes(), true),
        Value::UInt(u64::MAX)
    );
    assert_eq!(NcType::Byte.decode(&[0x81], false), Value::Int(-127));
}

#[test]
fn a_float_fill_value_attribute_is_written_as_xarray_reads_it() {
    let fill = |t: NcType, raw: Vec<u8>| Attr {
        name: "_FillValue".into(),
        nc_type: t,
        count: 1,
        raw,
    };
    let attrs = variable_attributes(&[
        fill(NcType::Float, (-9999.0f32).to_be_bytes().to_vec()),
        Attr {
            name: "units".into(),
            nc_type: NcType::Char,
            count: 1,
            raw: b"K".to_vec(),
        },
    ]);
    // xarray's own encoding of -9999.0 (tests/data/sample.zarr's t2m).
    assert_eq!(attrs.to_string(), r#"{"_FillValue":"AAAAAICHw8A=","units":"K"}"#);
    let ints = variable_attributes(&[fill(NcType::Short, (-1i16).to_be_bytes().to_vec())]);
    assert_eq!(ints.to_string(), r#"{"_FillValue":-1}"#);
}
