//! The `// nzfs:` reading guide under each variable of a header: how to
//! read its `.bin` files (element type, byte order, chunk and grid shape,
//! file naming, fill value, codec chain) and `data.bin`. Store text in it
//! goes through [`crate::naming::comment`], so it stays on its line.

use std::fmt::Write;

use crate::naming;
use crate::zarr::data_type::DataType;
use crate::zarr::metadata::ArrayMetadata;

/// `// nzfs:` lines saying how to read the variable's `.bin` files.
pub(super) fn write_reading_guide(out: &mut String, indent: &str, a: &ArrayMetadata, dim_names: &[&str]) {
    let at = format!("{indent}\t\t// nzfs: ");
    if let Some(reason) = &a.unsupported {
        let _ = writeln!(
            out,
            "{at}no chunk files ({}); data.bin gives EIO",
            naming::comment(reason)
        );
        fill_and_codecs(out, &at, a);
        return;
    }
    if a.data_type.is_text() {
        let _ = writeln!(
            out,
            "{at}data.txt: the whole array, one value per line in C order (UTF-8; \\\\ \\n \\r \\xNN escaped)"
        );
    }
    if a.data_type.element_size().is_none() {
        let grid = a.grid_shape();
        let _ = writeln!(
            out,
            "{at}{} named like {}.txt: each chunk's {} values, one per line; no data.bin",
            naming::count(grid.iter().product::<u64>(), "chunk file"),
            if grid.is_empty() {
                "0".to_string()
            } else {
                grid.iter()
                    .map(|g| "0".repeat(g.saturating_sub(1).to_string().len()))
                    .collect::<Vec<_>>()
                    .join(".")
            },
            a.data_type.name()
        );
        fill_and_codecs(out, &at, a);
        return;
    }
    let grid = a.grid_shape();
    let count: u64 = grid.iter().product();
    let x = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" x ");
    let order = if cfg!(target_endian = "little") {
        "little-endian"
    } else {
        "big-endian"
    };
    let element = match &a.data_type {
        _ if let Some(n) = a.narrow => {
            let shown = n.shown().name();
            format!(
                "{shown} (stored as {}, widened exactly to {shown} in every file)",
                n.name()
            )
        }
        DataType::Float16 => "float16 (2-byte IEEE half)".to_string(),
        DataType::Bool => "bool (1 byte, 0 or 1)".to_string(),
        DataType::Complex64 => "complex64 (float32 real, then imaginary)".to_string(),
        DataType::Complex128 => "complex128 (float64 real, then imaginary)".to_string(),
        DataType::Raw(n) => format!("r{} ({n} raw bytes)", n * 8),
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
            format!("{} (int64 counts)", a.data_type.name())
        }
        DataType::FixedBytes(n) => format!("S{n} ({n} bytes, NUL-padded; numpy \"S{n}\")"),
        DataType::FixedUtf32(n) => format!("U{n} ({n} UTF-32 code units, {}; numpy \"<U{n}\")", 4 * n),
        DataType::Struct(r) => {
            let _ = writeln!(
                out,
                "{at}record: {} bytes, fields packed in order, each in this host's byte order: {}",
                r.size(),
                naming::comment(&r.layout())
            );
            format!("{}-byte record", r.size())
        }
        dt => dt.name(),
    };
    if a.shape.is_empty() {
        let _ = writeln!(
            out,
            "{at}one file, 0.bin: a single {element} element, {order} (this host)"
        );
    } else {
        let example = (0..grid.len())
            .map(|d| "0".repeat(grid[d].saturating_sub(1).to_string().len()))
            .collect::<Vec<_>>();
        let _ = writeln!(
            out,
            "{at}{}, grid {} over ({}), named like {}.bin (zero-padded indices, C order)",
            naming::count(count, "chunk file"),
            x(&grid),
            naming::comment(&dim_names.join(", ")),
            example.join(".")
        );
        if a.is_regular() {
            let _ = writeln!(
                out,
                "{at}each file: {} {element} in C order, {order} (this host), {} bytes; edge chunks padded",
                x(&a.chunk_shape),
                a.chunk_bytes()
            );
        } else {
            // A rectilinear grid: edges as runs, `edge x count`.
            let edges: Vec<String> = a.axes.iter().map(|axis| format!("[{}]", axis.describe())).collect();
            let _ = writeln!(
                out,
                "{at}rectilinear grid, chunk edges per dimension {}",
                edges.join(" ")
            );
            let _ = writeln!(
                out,
                "{at}each file: its own chunk's shape of {element} in C order, {order} (this host), at most {} bytes; chunks past the array's edge padded",
                a.chunk_bytes()
            );
        }
    }
    fill_and_codecs(out, &at, a);
    let total = a.flat_bytes();
    if a.shape.is_empty() {
        let _ = writeln!(out, "{at}data.bin: the one {element} element, {order}, {total} bytes");
    } else {
        let _ = writeln!(
            out,
            "{at}data.bin: the whole array, {} {element} in C order, {order}, {total} bytes",
            x(&a.shape)
        );
        let slab = a.shape[1..]
            .iter()
            .fold(a.data_type.size() as u64, |acc, &n| acc.saturating_mul(n));
        let what = if a.shape.len() == 1 { "element" } else { "slab" };
        let _ = writeln!(
            out,
            "{at}e.g. {what} k of {}: dd if=data.bin bs={slab} skip=k count=1",
            naming::comment(dim_names.first().copied().unwrap_or("dim0"))
        );
    }
}

fn codec_chain_text(a: &ArrayMetadata) -> String {
    let parts: Vec<String> = a
        .codecs
        .iter()
        .map(|c| match &c.configuration {
            Some(cfg) => format!("{}{}", c.name, cfg),
            None => c.name.clone(),
        })
        .collect();
    parts.join(" | ")
}

/// The `zarr fill_value ...; codecs ...` line of the guide.
fn fill_and_codecs(out: &mut String, at: &str, a: &ArrayMetadata) {
    let _ = writeln!(
        out,
        "{at}zarr fill_value {}; codecs {}",
        naming::comment(&a.fill_value_json.to_string()),
        naming::comment(&codec_chain_text(a))
    );
}
