//! Any name a store can hold gives a `header.cdl` that ncgen
//! accepts and a `.nc` that netCDF-C reads, with nothing lost, duplicated
//! or injected. Stores of random hostile names (control characters, bidi
//! and combining marks, NFC/NFD twins, CDL keywords, 10 KB names, names
//! that clean to the same name) are mounted for real and read with ncgen
//! and ncdump. Bounded: a fixed number of seeded stores.

mod common;

use std::path::Path;
use std::process::Command;

use common::mount::Mount;

/// Pieces names are made of.
const PIECES: &[&str] = &[
    "a",
    "t2m",
    "é",
    "cafe\u{301}",
    "caf\u{e9}",
    "data",
    "variables",
    "dimensions",
    "group",
    "types",
    "_",
    "%x",
    " lead",
    "trail ",
    "a?b",
    "a\nb",
    "a\tb",
    "a_b",
    "\u{202e}bidi",
    "x\u{300}",
    "日本",
    "int",
    "NaN",
    "2m",
    "-x",
    "a:b",
    "\\",
    "\"q\"",
    "//",
    "\u{2028}",
    "\u{85}",
    "\u{1}",
    "t\n\t\tv:injected = \"not in the store\" ;\n\t\t//",
    // ncgen's special attributes (a group's _FillValue).
    "_FillValue",
    "_Storage",
    "_Format",
    "_Endianness",
    "_nc3_strict",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A name of one to three pieces; now and then 300 or 10,000 characters.
    fn name(&mut self) -> String {
        match self.below(20) {
            0 => "é".repeat(300),
            1 => "x".repeat(10_000),
            _ => (0..1 + self.below(3))
                .map(|_| PIECES[self.below(PIECES.len())])
                .collect(),
        }
    }
}

fn json(s: &str) -> String {
    nzfs::json::Value::Str(s.to_string()).to_string()
}

/// A consolidated store (names need not be file names): a root group and a
/// subgroup, each with arrays whose names, attributes and dimension names
/// are random. Returns the number of store attributes in the root group's
/// own `.nc` (its attributes and its arrays').
fn store(dir: &Path, rng: &mut Rng) -> usize {
    let mut entries = Vec::new();
    let attrs = |rng: &mut Rng| {
        let n = rng.below(4);
        let items: Vec<String> = (0..n).map(|i| format!("{}: {i}", json(&rng.name()))).collect();
        (n, format!("{{{}}}", items.join(", ")))
    };
    let mut root_attrs = 0;
    let (n, root_doc_attrs) = attrs(rng);
    root_attrs += n;
    let sub = rng.name();
    let mut names = std::collections::HashSet::new();
    names.insert(sub.clone());
    entries.push(format!(
        "{}: {{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {}}}",
        json(&sub),
        attrs(rng).1
    ));
    for parent in ["", sub.as_str()] {
        for _ in 0..3 {
            let name = rng.name();
            if name.starts_with("__") || name == "." || name == ".." || !names.insert(format!("{parent}/{name}")) {
                continue;
            }
            let (n, a) = attrs(rng);
            if parent.is_empty() {
                root_attrs += n;
            }
            let (d0, d1) = (rng.name(), rng.name());
            let path = if parent.is_empty() {
                name.clone()
            } else {
                format!("{parent}/{name}")
            };
            entries.push(format!(
                "{}: {{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [2, 3], \"data_type\": \"int16\",
                \"chunk_grid\": {{\"name\": \"regular\", \"configuration\": {{\"chunk_shape\": [2, 3]}}}},
                \"chunk_key_encoding\": {{\"name\": \"default\"}}, \"fill_value\": 7,
                \"codecs\": [{{\"name\": \"bytes\", \"configuration\": {{\"endian\": \"little\"}}}}],
                \"dimension_names\": [{}, {}], \"attributes\": {a}}}",
                json(&path),
                json(&d0),
                json(&d1)
            ));
        }
    }
    let root = format!(
        "{{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {root_doc_attrs},
        \"consolidated_metadata\": {{\"kind\": \"inline\", \"must_understand\": false, \"metadata\": {{{}}}}}}}",
        entries.join(",\n")
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("zarr.json"), root).unwrap();
    root_attrs
}

/// Lines of ncdump's header text that declare an attribute.
fn attribute_lines(dump: &str) -> usize {
    dump.lines()
        .filter(|l| l.starts_with("\t\t") && !l.starts_with("\t\t\t") && l.contains(" = "))
        .count()
}

#[test]
fn any_name_gives_a_header_ncgen_reads_and_a_nc_netcdf_c_reads() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let tmp = tempfile::tempdir().unwrap();
    for round in 0..30 {
        let s = tmp.path().join(format!("s{round}.zarr"));
        let store_attrs = store(&s, &mut rng);
        let m = Mount::at(&s, &[]);
        let mut headers = vec![m.mp.join("header.cdl")];
        let mut ncs = Vec::new();
        let mut stack = vec![m.mp.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    headers.push(p.join("header.cdl"));
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "nc") {
                    ncs.push(p);
                }
            }
        }
        for h in &headers {
            let text = std::fs::read_to_string(h).unwrap();
            assert!(
                !text.contains("injected = \"not in the store\" ;\n"),
                "round {round}: {text}"
            );
            let out = tmp.path().join("h.nc");
            let made = Command::new("ncgen")
                .args(["-k", "nc4", "-o"])
                .arg(&out)
                .arg(h)
                .output()
                .unwrap();
            assert!(
                made.status.success(),
                "round {round}: ncgen refused {}: {}\n{text}",
                h.display(),
                String::from_utf8_lossy(&made.stderr)
            );
        }
        for nc in &ncs {
            // A whole ncdump reads every value through netCDF-C.
            let dump = Command::new("ncdump").arg(nc).output().unwrap();
            assert!(
                dump.status.success(),
                "round {round}: ncdump {}: {}\n{}",
                nc.display(),
                String::from_utf8_lossy(&dump.stderr),
                m.log()
            );
            let dump = Command::new("ncdump").arg("-h").arg(nc).output().unwrap();
            let text = String::from_utf8_lossy(&dump.stdout);
            // No attribute is there twice: each `var:name = ` (or global
            // `:name = `) prefix of ncdump's text is unique.
            let mut seen = std::collections::HashSet::new();
            for l in text
                .lines()
                .filter(|l| l.starts_with("\t\t") && !l.starts_with("\t\t\t"))
            {
                if let Some((prefix, _)) = l.split_once(" = ") {
                    assert!(seen.insert(prefix.to_string()), "round {round}: {prefix} twice\n{text}");
                }
            }
            if nc.parent() == Some(m.mp.as_path()) {
                // Every store attribute of the root group and its arrays is
                // there (nzfs adds its own: never fewer).
                assert!(
                    attribute_lines(&text) >= store_attrs,
                    "round {round}: {store_attrs} attributes\n{text}"
                );
            }
        }
        drop(m);
    }
}

/// The naming cases, one store: each gives a header ncgen reads and a
/// `.nc` ncdump prints whole, with the names docs/usage.md promises.
#[test]
fn the_reported_names_are_renamed_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    let injection = "t\n\t\tv:injected = \"not in the store\" ;\n\t\t//";
    let long = "d".repeat(10_000);
    let array = |dims: [&str; 2], attrs: &str| {
        format!(
            "{{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [2, 3], \"data_type\": \"int16\",
            \"chunk_grid\": {{\"name\": \"regular\", \"configuration\": {{\"chunk_shape\": [2, 3]}}}},
            \"chunk_key_encoding\": {{\"name\": \"default\"}}, \"fill_value\": 7,
            \"codecs\": [{{\"name\": \"bytes\", \"configuration\": {{\"endian\": \"little\"}}}}],
            \"dimension_names\": [{}, {}], \"attributes\": {attrs}}}",
            json(dims[0]),
            json(dims[1])
        )
    };
    let mut entries = vec![format!(
        "\"v\": {}",
        array(
            [injection, &long],
            r#"{"a\nb": 1, "a\tb": 2, "caf\u00e9": 3, "cafe\u0301": 4}"#
        )
    )];
    for kw in ["data", "variables", "dimensions", "group", "types", "_", "%x"] {
        entries.push(format!("{}: {}", json(kw), array(["y", "x"], "{\"units\": \"m\"}")));
    }
    let root = format!(
        "{{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {{\" lead\": \"space\"}},
        \"consolidated_metadata\": {{\"kind\": \"inline\", \"must_understand\": false, \"metadata\": {{{}}}}}}}",
        entries.join(",\n")
    );
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), root).unwrap();
    let m = Mount::at(&s, &[]);
    let header = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    // The injected line stays inside names and strings.
    assert!(
        !header.lines().any(|l| l.trim_start().starts_with("v:injected")),
        "{header}"
    );
    let out = tmp.path().join("h.nc");
    let made = Command::new("ncgen")
        .args(["-k", "nc4", "-o"])
        .arg(&out)
        .arg(m.mp.join("header.cdl"))
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}\n{header}",
        String::from_utf8_lossy(&made.stderr)
    );
    let from_header = String::from_utf8(Command::new("ncdump").arg("-h").arg(&out).output().unwrap().stdout).unwrap();
    let nc = m.mp.join("s.nc");
    let dump = Command::new("ncdump").arg(&nc).output().unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    for (got, file) in [(&from_header, false), (&text.to_string(), true)] {
        // In the header, ncgen's keywords and unreadable names are renamed,
        // originals kept; in the .nc, every name netCDF-C accepts is kept
        // as it is (a Fortran nf90_inq_varid("data") finds it).
        for (shown, original) in [
            ("data_", "data"),
            ("variables_", "variables"),
            ("__", "_"),
            ("_%x", "%x"),
        ] {
            let keeps = file && original != "%x";
            let renamed = got.contains(&format!("{shown}:_nz_name = \"{original}\""));
            assert_eq!(renamed, !keeps, "{shown} (file: {file})\n{got}");
            if keeps {
                assert!(got.contains(&format!("short {original}(y, x) ;")), "{original}\n{got}");
            }
        }
        // Both attributes that clean to a_b, and both spellings of café.
        assert!(got.contains("v:a_b = 1") && got.contains("v:a_b_nz2 = 2"), "{got}");
        assert!(
            got.contains("v:caf\u{e9} = 3") && got.contains("v:caf\u{e9}_nz2 = 4"),
            "{got}"
        );
        // The space-led global attribute.
        assert!(got.contains(":_\\ lead = \"space\""), "{got}");
        // The 10 KB dimension: cut to the longest name, the original kept.
        assert!(got.contains(&format!("{} = 3 ;", "d".repeat(241))), "{got}");
        assert!(got.contains("_nz_renamed_dimensions"), "{got}");
    }
    // netCDF-C finds the variable by its own name (nc_inq_varid("data")).
    let by_name = Command::new("ncdump").args(["-v", "data"]).arg(&nc).output().unwrap();
    let said = String::from_utf8_lossy(&by_name.stdout);
    assert!(by_name.status.success(), "{}", String::from_utf8_lossy(&by_name.stderr));
    assert!(said.contains("\n data =\n"), "{said}");
    // nzfs check names what the views show instead.
    let check = common::mount::nzfs(&["check", "--no-values", s.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("show it as \"data_\""), "{report}");
    // ncdump printed the data too: 7 is the fill of every variable.
    assert!(text.contains("data:") && text.contains("7, 7, 7"), "{text}");
}
