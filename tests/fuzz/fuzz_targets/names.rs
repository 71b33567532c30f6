//! Any string through the naming module: the netCDF name obeys
//! netCDF-C's `NC_check_name` and ncgen's rules, and no name, string or
//! comment can end a CDL line or a string early.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nzfs::naming;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let nc = naming::netcdf(&s);
    assert!(!nc.is_empty() && nc.len() <= naming::MAX_NAME, "{nc:?}");
    assert!(!nc.chars().any(|c| c.is_control() || matches!(c, '/' | '?' | '\u{2028}' | '\u{2029}')), "{nc:?}");
    let first = nc.chars().next().unwrap();
    assert!(!first.is_ascii() || first.is_ascii_alphanumeric() || first == '_', "{nc:?}");
    assert!(!nc.ends_with(' '), "{nc:?}");
    // Idempotent: a cleaned name is its own netCDF name.
    assert_eq!(naming::netcdf(&nc), nc);
    for line in [naming::cdl(&nc), naming::comment(&s), naming::quote(&s)] {
        assert!(!line.contains(['\n', '\r']), "{line:?}");
    }
    let q = naming::quote(&s);
    // The only unescaped quotes are the first and the last.
    let inner = &q[1..q.len() - 1];
    let mut escaped = false;
    for c in inner.chars() {
        assert!(escaped || c != '"', "{q:?}");
        escaped = !escaped && c == '\\';
    }
    // Names of one scope stay distinct.
    let names = [s.as_ref(), nc.as_str(), "data", "_"];
    let unique = naming::unique(names);
    let set: std::collections::HashSet<&String> = unique.iter().collect();
    assert_eq!(set.len(), unique.len(), "{unique:?}");
});
