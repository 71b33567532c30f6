//! `nzfs check`: the right verdict, exit code and findings for one fixture
//! per NZ-1.0 rule (scripts/make_fixtures.py, make_nz), through the binary.

mod common;

use std::process::Command;

use nzfs::json::{self, Value};

/// Run `nzfs check --json STORE`: (exit code, the JSON document).
fn check(store: &str) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .args(["check", "--json"])
        .arg(common::data_dir().join(store))
        .output()
        .unwrap();
    let doc =
        json::parse(&out.stdout).unwrap_or_else(|e| panic!("{store}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), doc)
}

fn findings(doc: &Value) -> Vec<(String, String, String, String)> {
    doc.get("findings")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let g = |k: &str| {
                f.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("finding without {k}"))
                    .to_string()
            };
            assert!(g("section").starts_with("NZ §") && !g("expected").is_empty());
            (g("severity"), g("path"), g("rule"), g("found"))
        })
        .collect()
}

#[test]
fn conforming_stores_pass() {
    for store in [
        "nz_conforming.zarr",
        "nz_capital_conventions.zarr",
        "sample.zarr",
        "differential.zarr",
    ] {
        let (code, doc) = check(store);
        assert_eq!(code, 0, "{store}: {doc}");
        assert_eq!(doc.get("conforms"), Some(&Value::Bool(true)));
        assert!(findings(&doc).is_empty(), "{store}: {doc}");
    }
    let (_, doc) = check("nz_conforming.zarr");
    let coords: Vec<&str> = doc
        .get("dimension_coordinates")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(coords, ["/sub/x", "/x", "/y"]);
}

#[test]
fn each_broken_rule_is_named() {
    /// (store, exit code, severity, path, rule, words the finding must hold)
    type Case = (
        &'static str,
        i32,
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    );
    let cases: &[Case] = &[
        (
            // Plain Zarr is not in error: it does not declare NZ-1.0.
            "nz_undeclared.zarr",
            // Not NZ-1.0 at all: it does not conform (a calm note, exit 1).
            1,
            "error",
            "/",
            "convention-declaration",
            &["no conventions"],
        ),
        (
            "nz_shared_dimension.zarr",
            1,
            "error",
            "/",
            "shared-dimension",
            &["`x`", "\"a\"", "\"b\"", "3", "4"],
        ),
        (
            "nz_fill_value_string.zarr",
            1,
            "error",
            "/counts",
            "fill-value-type",
            &["missing"],
        ),
        (
            "nz_fill_value_range.zarr",
            1,
            "error",
            "/bytes",
            "fill-value-type",
            &["300"],
        ),
        (
            "nz_mixed_attribute.zarr",
            1,
            "error",
            "/v",
            "homogeneous-attribute",
            &["two", "number and string"],
        ),
        (
            "nz_not_monotonic.zarr",
            0,
            "warning",
            "/x",
            "dimension-coordinate",
            &["not strictly monotonic"],
        ),
        (
            "nz_dimension_names.zarr",
            1,
            "error",
            "/unnamed",
            "dimension-names",
            &["no dimension names"],
        ),
        (
            "nz_dimension_names.zarr",
            1,
            "error",
            "/partly",
            "dimension-names",
            &["null"],
        ),
        ("nz_naming.zarr", 0, "warning", "/2nd-field", "naming", &["2nd-field"]),
        ("nz_naming.zarr", 0, "warning", "/", "naming", &["Temp", "temp"]),
        (
            "nz_reserved.zarr",
            1,
            "error",
            "/v",
            "reserved-attribute",
            &["conventions"],
        ),
        (
            "nz_reserved.zarr",
            1,
            "error",
            "/grp",
            "reserved-attribute",
            &["_FillValue"],
        ),
        (
            "nz_consolidated_mismatch.zarr",
            1,
            "error",
            "/v",
            "consolidated-metadata",
            &["differ"],
        ),
        (
            "bad.zarr",
            1,
            "error",
            "/unknown_codec",
            "zarr-v3-valid",
            &["mystery_codec"],
        ),
    ];
    for (store, code, severity, path, rule, words) in cases {
        let (got_code, doc) = check(store);
        assert_eq!(got_code, *code, "{store}: {doc}");
        let all = findings(&doc);
        let hit = all
            .iter()
            .find(|(s, p, r, _)| s == severity && p == path && r == rule)
            .unwrap_or_else(|| panic!("{store}: no {severity} {rule} at {path} in {all:?}"));
        for w in *words {
            assert!(hit.3.contains(w), "{store}: {w:?} not in {:?}", hit.3);
        }
    }
    // A non-monotonic array is not listed as a dimension coordinate.
    let (_, doc) = check("nz_not_monotonic.zarr");
    assert_eq!(doc.get("dimension_coordinates").unwrap().as_array().unwrap().len(), 0);
}

#[test]
fn text_output_and_unopenable_stores() {
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .arg("check")
        .arg(common::data_dir().join("nz_shared_dimension.zarr"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("error") && text.contains("shared-dimension") && text.contains("does not conform"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .args(["check", "/nonexistent/store.zarr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .arg("check")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn zarr_v2_stores_are_checked_with_array_dimensions_as_names() {
    // xarray wrote _ARRAY_DIMENSIONS for every variable: no naming finding.
    let (_, doc) = check("v2_xarray.zarr");
    assert_eq!(doc.get("zarr_format"), Some(&Value::Int(2)), "{doc}");
    let all = findings(&doc);
    assert!(!all.iter().any(|f| f.2 == "dimension-names"), "{all:?}");
    // zarr-python's plain v2 arrays have none: the rule that needs names
    // fails. The store does not declare NZ-1.0, so that is a note, not an
    // error; and it does not conform: exit 1.
    let (code, doc) = check("v2_layout.zarr");
    assert_eq!(code, 1);
    assert_eq!(doc.get("declared"), Some(&Value::Bool(false)), "{doc}");
    let hit = doc
        .get("findings")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f.get("path").and_then(Value::as_str) == Some("/slash"))
        .unwrap_or_else(|| panic!("{doc}"))
        .clone();
    assert_eq!(hit.get("rule").and_then(Value::as_str), Some("dimension-names"));
    assert!(
        hit.get("expected")
            .and_then(Value::as_str)
            .unwrap()
            .contains("_ARRAY_DIMENSIONS")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .arg("check")
        .arg(common::data_dir().join("v2_layout.zarr"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(Zarr v2) does not declare NZ-1.0"), "{text}");
    // Plain Zarr breaks no rule: "error" and "does not conform" are for
    // stores that declare NZ-1.0 (nz_shared_dimension does: exit 1 above).
    assert!(!text.contains("error ") && !text.contains("does not conform"), "{text}");
    assert!(text.contains("note    /: convention-declaration"), "{text}");
    // A calm note, and exit 1 all the same: 0 is "conforms".
    assert_eq!(out.status.code(), Some(1));
}

/// The levels of an OME-NGFF multiscale image differ in size: that is the
/// pyramid, not a dimension of two lengths (ome-zarr's s0 … s4 share y
/// and x).
#[test]
fn the_levels_of_a_multiscale_image_are_no_shared_dimension_finding() {
    for store in ["ome/ngff04.zarr", "ome/ngff05.zarr"] {
        let (_, doc) = check(store);
        let all = findings(&doc);
        assert!(!all.iter().any(|f| f.2 == "shared-dimension"), "{store}: {all:?}");
    }
    // Arrays of a group that is no image still are.
    let (_, doc) = check("nz_shared_dimension.zarr");
    assert!(findings(&doc).iter().any(|f| f.2 == "shared-dimension"));
}
