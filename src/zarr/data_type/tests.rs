//! Unit tests of data types: element values and fill value forms.

mod value_tests {
    use super::super::*;

    #[test]
    fn values_read_as_numbers_in_native_order() {
        let b: Vec<u8> = [-3i16, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(DataType::Int16.value_f64(&b, 0), Some(-3.0));
        assert_eq!(DataType::Int16.value_f64(&b, 1), Some(7.0));
        assert_eq!(DataType::Int16.value_f64(&b, 2), None);
        assert_eq!(DataType::Float64.value_f64(&1.5f64.to_ne_bytes(), 0), Some(1.5));
        assert_eq!(DataType::Bool.value_f64(&[1], 0), None);
        assert_eq!(DataType::Complex64.element_size(), Some(8));
    }
}

mod fill_tests {
    use super::super::*;
    use crate::json::parse;

    fn fill(dt: &str, v: &str) -> Result<Vec<u8>, MetadataError> {
        let dt = DataType::from_json(&parse(dt.as_bytes()).unwrap()).unwrap();
        dt.fill_value(&parse(v.as_bytes()).unwrap()).map(|f| f.0)
    }

    #[test]
    fn float_forms() {
        assert_eq!(fill(r#""float32""#, r#""NaN""#).unwrap(), 0x7fc0_0000u32.to_ne_bytes());
        assert_eq!(fill(r#""float32""#, "NaN").unwrap(), 0x7fc0_0000u32.to_ne_bytes());
        assert_eq!(
            fill(r#""float32""#, r#""0x7fc00001""#).unwrap(),
            0x7fc0_0001u32.to_ne_bytes()
        );
        assert_eq!(
            fill(r#""float64""#, r#""-Infinity""#).unwrap(),
            f64::NEG_INFINITY.to_ne_bytes()
        );
        assert_eq!(fill(r#""float64""#, "-9999").unwrap(), (-9999f64).to_ne_bytes());
        assert_eq!(fill(r#""float16""#, "1.5").unwrap(), 0x3e00u16.to_ne_bytes());
        assert!(fill(r#""float32""#, r#""0x1234567890""#).is_err());
        // The wrong width is refused, not read as a denormal.
        assert!(fill(r#""float32""#, r#""0x7fc0""#).is_err());
        assert!(fill(r#""float64""#, r#""0x7fc00000""#).is_err());
        assert!(fill(r#""float16""#, r#""0x7e""#).is_err());
        assert!(fill(r#""float32""#, r#""0x+fc00000""#).is_err());
        assert_eq!(fill(r#""float16""#, r#""0x7e00""#).unwrap(), 0x7e00u16.to_ne_bytes());
        assert!(fill(r#""float32""#, r#""nan""#).is_err());
    }

    #[test]
    fn int_bool_complex_raw() {
        assert_eq!(fill(r#""int16""#, "-2").unwrap(), (-2i16).to_ne_bytes());
        assert!(fill(r#""uint8""#, "256").is_err());
        assert!(fill(r#""uint64""#, "-1").is_err());
        assert_eq!(
            fill(r#""uint64""#, "18446744073709551615").unwrap(),
            u64::MAX.to_ne_bytes()
        );
        assert_eq!(fill(r#"{"name": "bool"}"#, "true").unwrap(), [1]);
        let c = fill(r#""complex64""#, r#"[1.5, "-Infinity"]"#).unwrap();
        assert_eq!(&c[..4], 1.5f32.to_ne_bytes());
        assert_eq!(&c[4..], f32::NEG_INFINITY.to_ne_bytes());
        assert_eq!(fill(r#""r24""#, "[1, 2, 255]").unwrap(), [1, 2, 255]);
        assert!(fill(r#""r24""#, "[1, 2]").is_err());
        let zp = r#"{"name": "raw_bytes", "configuration": {"length_bytes": 3}}"#;
        assert_eq!(fill(zp, r#""AQID""#).unwrap(), [1, 2, 3]);
        assert!(fill(zp, r#""AQI=""#).is_err());
        assert!(DataType::from_json(&parse(br#""r7""#).unwrap()).is_err());
    }

    #[test]
    fn extension_types() {
        let dt = r#"{"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}"#;
        assert_eq!(fill(dt, r#""NaT""#).unwrap(), i64::MIN.to_ne_bytes());
        assert_eq!(fill(dt, "-9223372036854775808").unwrap(), i64::MIN.to_ne_bytes());
        assert!(fill(dt, "1.5").is_err());
        assert!(
            DataType::from_json(
                &parse(br#"{"name": "numpy.timedelta64", "configuration": {"unit": "fortnight"}}"#).unwrap()
            )
            .is_err()
        );
        assert_eq!(
            fill(r#""bfloat16""#, r#""0x7fc0""#).unwrap(),
            0x7fc0_0000u32.to_ne_bytes()
        );
        assert_eq!(fill(r#""bfloat16""#, "-1.5").unwrap(), (-1.5f32).to_ne_bytes());
        let u = r#"{"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}"#;
        let want: Vec<u8> = ['h', 'i'].iter().flat_map(|&c| (c as u32).to_ne_bytes()).collect();
        assert_eq!(fill(u, r#""hi""#).unwrap(), want);
        assert!(fill(u, r#""too long""#).is_err());
        assert_eq!(fill(r#""string""#, r#""a\nb""#).unwrap(), b"a\\nb\n");
        assert_eq!(fill(r#""string""#, "0").unwrap(), b"0\n");
        assert_eq!(
            DataType::from_json(&parse(br#""complex_float32""#).unwrap()).unwrap(),
            DataType::Complex64
        );
    }
}
