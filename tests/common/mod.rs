//! Shared test helpers: the fixture manifest written by
//! scripts/make_fixtures.py, and the chunk-by-chunk comparison with the
//! arrays zarr-python/numpy decoded.
#![allow(dead_code)]

#[cfg(feature = "csi")]
pub mod csi;
pub mod image_tools;
pub mod mount;
pub mod netcdf_tools;
pub mod repos;
pub mod servers;
pub mod system;
pub mod users;
pub mod zip;

use std::path::{Path, PathBuf};

use nzfs::json::{self, Value};

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// One array of the manifest.
#[derive(Debug, Clone)]
pub struct Expected {
    pub store: String,
    pub path: String,
    pub data_type: String,
    pub shape: Vec<u64>,
    pub chunk_shape: Vec<u64>,
    /// The whole array, little-endian C order, as zarr-python/numpy decoded it.
    pub bytes: Vec<u8>,
    /// One fill element, when the fixture states it.
    pub fill: Option<Vec<u8>>,
}

impl Expected {
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    pub fn item_size(&self) -> usize {
        match self.elements() {
            0 => 1, // no elements to compare; any size works
            n => self.bytes.len() / n as usize,
        }
    }

    pub fn grid_shape(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect()
    }

    pub fn chunk_count(&self) -> u64 {
        self.grid_shape().iter().product()
    }

    /// The grid index of the `linear`-th chunk in C order.
    pub fn unravel(&self, mut linear: u64) -> Vec<u64> {
        let grid = self.grid_shape();
        let mut idx = vec![0; grid.len()];
        for d in (0..grid.len()).rev() {
            idx[d] = linear % grid[d];
            linear /= grid[d];
        }
        idx
    }

    /// The chunk file name the layout promises (padded, C order).
    pub fn chunk_name(&self, linear: u64) -> String {
        let grid = self.grid_shape();
        if grid.is_empty() {
            return "0.bin".into();
        }
        let parts: Vec<String> = self
            .unravel(linear)
            .iter()
            .zip(&grid)
            .map(|(i, g)| format!("{i:0w$}", w = (g - 1).to_string().len()))
            .collect();
        format!("{}.bin", parts.join("."))
    }

    /// Compare a chunk file's bytes with the expected array over the
    /// in-bounds region; out of bounds, compare with the fill when known.
    pub fn check_chunk(&self, linear: u64, got: &[u8]) -> Result<(), String> {
        let item = self.item_size();
        let chunk_elems: u64 = self.chunk_shape.iter().product();
        if got.len() as u64 != chunk_elems * item as u64 {
            return Err(format!(
                "{}/{}: chunk {linear} has {} bytes, expected {}",
                self.store,
                self.path,
                got.len(),
                chunk_elems * item as u64
            ));
        }
        let origin: Vec<u64> = self
            .unravel(linear)
            .iter()
            .zip(&self.chunk_shape)
            .map(|(g, c)| g * c)
            .collect();
        let nd = self.shape.len();
        for e in 0..chunk_elems {
            // Position inside the chunk, then in the array.
            let mut rest = e;
            let mut pos = vec![0u64; nd];
            for d in (0..nd).rev() {
                pos[d] = rest % self.chunk_shape[d];
                rest /= self.chunk_shape[d];
            }
            let global: Vec<u64> = pos.iter().zip(&origin).map(|(p, o)| p + o).collect();
            let have = &got[e as usize * item..(e as usize + 1) * item];
            let inside = global.iter().zip(&self.shape).all(|(g, s)| g < s);
            let want: &[u8] = if inside {
                let lin = global.iter().zip(&self.shape).fold(0u64, |acc, (g, s)| acc * s + g);
                &self.bytes[lin as usize * item..(lin as usize + 1) * item]
            } else {
                continue;
            };
            if have != want {
                return Err(format!(
                    "{}/{} chunk {linear} element {global:?}: got {have:02x?}, expected {want:02x?}",
                    self.store, self.path
                ));
            }
        }
        Ok(())
    }
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// Bytes from hex digits (test data written as text).
pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn manifest_entries() -> Vec<Value> {
    let text = std::fs::read(data_dir().join("expected/manifest.json"))
        .expect("tests/data/expected/manifest.json (run scripts/make_fixtures.py)");
    let doc = json::parse(&text).unwrap();
    doc.get("arrays").unwrap().as_array().unwrap().to_vec()
}

/// The text view of one string-valued array, as computed by the fixture
/// generator from zarr-python's values (and numcodecs' chunk decoding).
#[derive(Debug, Clone)]
pub struct ExpectedText {
    pub store: String,
    pub path: String,
    /// `data.txt`.
    pub text: Vec<u8>,
    /// For variable-length arrays: each chunk's `.txt`, by linear index.
    pub chunks: Vec<(u64, Vec<u8>)>,
}

/// Every string-valued array the fixture generator recorded.
pub fn text_manifest() -> Vec<ExpectedText> {
    let dir = data_dir();
    manifest_entries()
        .iter()
        .filter_map(|a| {
            let text = a.get("text").and_then(Value::as_str)?;
            let mut chunks: Vec<(u64, Vec<u8>)> = match a.get("chunk_texts") {
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.parse().unwrap(),
                            std::fs::read(dir.join(v.as_str().unwrap())).unwrap(),
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
            chunks.sort();
            Some(ExpectedText {
                store: a.get("store").unwrap().as_str().unwrap().into(),
                path: a.get("path").unwrap().as_str().unwrap().into(),
                text: std::fs::read(dir.join(text)).unwrap(),
                chunks,
            })
        })
        .collect()
}

/// Every array with binary expected values the fixture generator recorded.
pub fn manifest() -> Vec<Expected> {
    let dir = data_dir();
    manifest_entries()
        .iter()
        .filter(|a| a.get("expected").and_then(Value::as_str).is_some())
        .map(|a| Expected {
            store: a.get("store").unwrap().as_str().unwrap().into(),
            path: a.get("path").unwrap().as_str().unwrap().into(),
            data_type: a.get("data_type").unwrap().as_str().unwrap().into(),
            shape: u64s(a.get("shape").unwrap()),
            chunk_shape: u64s(a.get("chunk_shape").unwrap()),
            bytes: std::fs::read(dir.join(a.get("expected").unwrap().as_str().unwrap())).unwrap(),
            fill: a.get("fill").and_then(Value::as_str).map(hex),
        })
        .collect()
}

/// The distinct store names of the manifest.
pub fn stores(m: &[Expected]) -> Vec<String> {
    let mut s: Vec<String> = m.iter().map(|e| e.store.clone()).collect();
    s.sort();
    s.dedup();
    s
}

/// Copy a directory tree (a fixture store, to damage in a test).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
