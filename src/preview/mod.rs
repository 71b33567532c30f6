//! Previews: `preview.png`, a picture of an array's first 2-D
//! plane, and `index.html`, a page of the whole dataset, both from the
//! mounted dataset alone.
//!
//! A preview shows the last two dimensions at leading indices 0, sampled
//! with one stride along both so that its long side is at most
//! [`MAX_SIDE`] pixels, and a small plane scaled up by a whole factor (each
//! value a square of pixels) so that its long side is at least
//! [`MIN_SIDE`] where that fits; only the sampled points are read, through the
//! decoded-chunk cache, so a preview of a 1 TB array decodes at most the
//! chunks, or inner chunks of shards, those points fall in, holds no more
//! than its pixels and one of those units beyond the cache, and stops
//! when its reader is gone. Values map to viridis over the plane's
//! 2nd-98th percentiles (numpy's linear method, bit for bit), or, for a
//! level of an OME-NGFF image, to its channel 0's colour over its display
//! window (`omero`). What is missing is transparent: a point in a chunk
//! the store does not hold, NaN, and, except in an image, a value its
//! `_FillValue` or `missing_value` attribute declares (a Zarr v2 array's
//! `fill_value` is its `_FillValue`, as xarray reads it). A value that
//! merely equals a Zarr v3 `fill_value` is a value, and an image's zeros
//! are pixels; a plane whose latitude coordinate increases along rows is
//! flipped, so that north is up.
//!
//! Invariants: a PNG's length follows from the metadata alone
//! ([`Plan::png_len`]): its image data is stored (uncompressed) deflate
//! blocks, and its text chunks have fixed widths, so `stat` decodes
//! nothing. The encoder is hand-written because no well-kept crate writes
//! stored deflate blocks (the `png` crate's fastest setting still
//! compresses, whose length is known only after encoding).

use crate::array::Array;
use crate::json::Value;
use crate::zarr::data_type::DataType;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};

pub mod cftime;
mod index;
mod omero;
mod png;
mod viridis;
pub use index::{Shown, index_html};
pub use png::encode;
use viridis::VIRIDIS;

/// The longest side of a preview, in pixels.
pub const MAX_SIDE: u64 = 512;
/// The long side a small plane is scaled up to at least (by a whole
/// factor, within [`MAX_SIDE`]): an 18 x 36 grid is 144 x 288 pixels.
pub const MIN_SIDE: u64 = 256;
/// The name of the preview in an array directory.
pub const PREVIEW_NAME: &str = "preview.png";
/// The name of the page at the mount root.
pub const INDEX_NAME: &str = "index.html";

/// What a preview of one array shows, from metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The image's width in pixels (after any reduction).
    pub width: u64,
    /// The image's height in pixels.
    pub height: u64,
    /// Every how many elements along each side a pixel is taken (1: all).
    pub stride: u64,
    /// How many pixels along each side one sampled value takes (1 but for
    /// small planes, scaled up).
    pub scale: u64,
    /// The index of each leading dimension (all 0) and the names of the
    /// two shown, for the text chunk.
    pub plane: String,
    /// The array's `units`, for the text chunk.
    pub units: String,
    /// A packed variable's `scale_factor` and `add_offset` (CF): the range
    /// in the text chunk is of the unpacked values, in those units.
    pub unpack: Option<(f64, f64)>,
    /// Whether rows are shown bottom-up (latitude increasing along them).
    pub flip: bool,
    /// An OME-NGFF image's display window and colour, shown in place of
    /// viridis over the percentiles.
    pub window: Option<omero::Window>,
    /// A level of an OME-NGFF image: only absent chunks and NaN are holes
    /// (its fill value, 0 as ome-zarr writes it, is a pixel's value too).
    pub image: bool,
}

/// Whether array metadata can be previewed: a numeric type (not bool or
/// complex), two dimensions or more, none of them empty.
pub fn previewable(m: &crate::zarr::metadata::ArrayMetadata) -> bool {
    m.data_type.is_number()
        && !matches!(m.data_type, DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. })
        && m.shape.len() >= 2
        && m.shape.iter().all(|&s| s > 0)
}

fn attr<'a>(attrs: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The sibling 1-D array that is the coordinate of dimension `dim` of
/// node `n`, when it is latitude (CF: `units` degrees north, or
/// `standard_name` latitude).
fn latitude_of(h: &Hierarchy, n: usize, dim: &str, len: u64) -> Option<usize> {
    let parent = h.nodes[n].parent?;
    h.nodes[parent].children.iter().copied().find(|&c| {
        let node = &h.nodes[c];
        let NodeKind::Array(a) = &node.kind else { return false };
        let m = &a.metadata;
        let units = attr(&m.attributes, "units").and_then(Value::as_str).unwrap_or_default();
        let standard = attr(&m.attributes, "standard_name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        node.name == dim
            && m.shape == [len]
            && m.data_type.is_number()
            && (standard == "latitude"
                || [
                    "degrees_north",
                    "degree_north",
                    "degree_N",
                    "degrees_N",
                    "degreeN",
                    "degreesN",
                ]
                .contains(&units))
    })
}

/// The plan of a preview of array node `n` (`None` if it has none), and
/// the latitude coordinate whose first and last values decide the flip.
pub fn plan(h: &Hierarchy, n: usize) -> Option<(Plan, Option<usize>)> {
    let node = h.nodes.get(n)?;
    let NodeKind::Array(a) = &node.kind else { return None };
    let m = &a.metadata;
    if !previewable(m) {
        return None;
    }
    let nd = m.shape.len();
    let (ny, nx) = (m.shape[nd - 2], m.shape[nd - 1]);
    let stride = ny.max(nx).div_ceil(MAX_SIDE).max(1);
    let long = ny.max(nx).max(1);
    let scale = match stride {
        1 => MIN_SIDE.div_ceil(long).min(MAX_SIDE / long).max(1),
        _ => 1,
    };
    let name = |d: usize| {
        m.dimension_names
            .get(d)
            .cloned()
            .flatten()
            .unwrap_or_else(|| format!("dim{d}"))
    };
    let lead: Vec<String> = (0..nd - 2).map(|d| format!("{}=0", name(d))).collect();
    let plane = format!(
        "{}[{}:, :] ({} down, {} across, every {stride})",
        node.path,
        "0, ".repeat(nd - 2),
        name(nd - 2),
        name(nd - 1),
    ) + &if lead.is_empty() {
        String::new()
    } else {
        format!("; {}", lead.join(", "))
    };
    let units = attr(&m.attributes, "units")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let number = |k: &str| match attr(&m.attributes, k) {
        Some(Value::Int(i)) => Some(*i as f64),
        Some(Value::UInt(u)) => Some(*u as f64),
        Some(Value::Float(f)) => Some(*f),
        _ => None,
    };
    let unpack = match (number("scale_factor"), number("add_offset")) {
        (None, None) => None,
        (scale, offset) => Some((scale.unwrap_or(1.0), offset.unwrap_or(0.0))),
    };
    let lat = m
        .dimension_names
        .get(nd - 2)
        .cloned()
        .flatten()
        .and_then(|d| latitude_of(h, n, &d, ny));
    Some((
        Plan {
            width: nx.div_ceil(stride) * scale,
            height: ny.div_ceil(stride) * scale,
            stride,
            scale,
            plane,
            units,
            unpack,
            flip: false,
            window: omero::window(h, n),
            image: h.ngff_image_of(n).is_some(),
        },
        lat,
    ))
}

/// The text chunks of a preview: key and text (the range as written by
/// [`range_text`], always [`RANGE_WIDTH`] bytes).
fn texts(plan: &Plan, range: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Software", format!("nzfs {}", env!("CARGO_PKG_VERSION"))),
        ("nzfs:plane", plan.plane.clone()),
        ("nzfs:units", plan.units.clone()),
        ("nzfs:range", range.to_string()),
        (
            "nzfs:colors",
            plan.window.as_ref().map_or_else(
                || "viridis over the 2nd-98th percentiles; absent chunks, _FillValue, missing_value and NaN transparent".to_string(),
                omero::Window::describe,
            ),
        ),
    ]
}

/// The width of the `nzfs:range` text.
pub const RANGE_WIDTH: usize = 2 * 14 + 1;

/// `lo hi` in a fixed width (`none` when the plane has no value).
pub fn range_text(range: Option<(f64, f64)>) -> String {
    let t = match range {
        Some((lo, hi)) => format!("{:<14} {:<14}", format!("{lo:+.6e}"), format!("{hi:+.6e}")),
        None => "none".to_string(),
    };
    format!("{t:<RANGE_WIDTH$}")
}

impl Plan {
    /// The raw image data: a filter byte and 4 bytes (RGBA) a pixel, a row.
    fn raw_len(&self) -> u64 {
        self.height * (1 + 4 * self.width)
    }

    /// The length of the PNG, from the plan alone.
    pub fn png_len(&self) -> u64 {
        let raw = self.raw_len();
        let blocks = raw.div_ceil(65535).max(1);
        let idat = 2 + raw + 5 * blocks + 4;
        // A tEXt chunk holds one Latin-1 byte per character ([`latin1`]).
        let text: u64 = texts(self, &range_text(None))
            .iter()
            .map(|(k, t)| 12 + k.len() as u64 + 1 + t.chars().count() as u64)
            .sum();
        8 + 25 + text + 12 + idat + 12
    }
}

/// numpy's `percentile(a, q)` (method "linear") of sorted `a`, bit for bit.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let q = q / 100.0;
    // numpy's "linear" method: (n - 1) * q, then its _lerp.
    let virtual_index = (n - 1) as f64 * q;
    if virtual_index >= (n - 1) as f64 {
        return sorted[n - 1];
    }
    if virtual_index < 0.0 {
        return sorted[0];
    }
    let previous = virtual_index.floor();
    let gamma = virtual_index - previous;
    let (a, b) = (sorted[previous as usize], sorted[previous as usize + 1]);
    let diff = b - a;
    if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    }
}

/// The palette index of `v` over `[lo, hi]`.
pub fn color_index(v: f64, lo: f64, hi: f64) -> usize {
    if hi <= lo {
        return 0;
    }
    ((v - lo) / (hi - lo) * 255.0 + 0.5).floor().clamp(0.0, 255.0) as usize
}

/// The sampled values of the plan's plane of `array`, row by row (rows in
/// array order), as numbers; `None` where the element is missing (see the
/// module doc).
/// Only the sampled points are read ([`Array::read_points`]), and
/// `keep_going` is asked before each row: when it says no, the work stops
/// with [`ArrayError::Stopped`](crate::array::ArrayError::Stopped).
pub fn sample(
    array: &Array,
    plan: &Plan,
    keep_going: &dyn Fn() -> bool,
) -> Result<Vec<Option<f64>>, crate::array::ArrayError> {
    let m = array.metadata();
    let nd = m.shape.len();
    let (ny, nx) = (m.shape[nd - 2], m.shape[nd - 1]);
    let s = plan.stride;
    // The `_FillValue` attribute (numbers, "NaN", base64 float64) in the
    // array's type, else the Zarr fill value.
    let narrow = |x: f64| match m.data_type {
        DataType::Float16 | DataType::BFloat16 | DataType::Float32 => f64::from(x as f32),
        _ => x,
    };
    // What the attributes declare missing: `_FillValue`, and
    // `missing_value` (one number or a list); none in an image.
    let number = |v: &Value| {
        crate::zarr::data_type::fill_value_number(v)
            .ok()
            .map(|n| narrow(n.as_f64()))
    };
    let mut missing: Vec<f64> = Vec::new();
    if !plan.image {
        missing.extend(attr(&m.attributes, "_FillValue").and_then(number));
        match attr(&m.attributes, "missing_value") {
            Some(Value::Array(items)) => missing.extend(items.iter().take(16).filter_map(number)),
            Some(v) => missing.extend(number(v)),
            None => {}
        }
    }
    let k = plan.scale.max(1);
    let mut out = Vec::with_capacity(((plan.width / k) * (plan.height / k)) as usize);
    // The leading indices are 0: row y of the plane starts at element y * nx.
    let mut points = Vec::with_capacity((plan.width / k) as usize);
    for y in (0..ny).step_by(s as usize) {
        if !keep_going() {
            return Err(crate::array::ArrayError::Stopped {
                what: format!("the preview of {}", array.path()),
            });
        }
        points.clear();
        points.extend((0..nx).step_by(s as usize).map(|x| y * nx + x));
        let (row, present) = array.read_points(&points)?;
        for (i, &present) in present.iter().enumerate() {
            let v = m.data_type.value_f64(&row, i).filter(|v| !v.is_nan() && present);
            out.push(v.filter(|v| !missing.contains(v)));
        }
    }
    Ok(out)
}

/// The 2nd and 98th percentiles of the finite values (±Inf would make
/// them NaN; they take the ends of the scale), or `None` when none is.
pub fn value_range(values: &[Option<f64>]) -> Option<(f64, f64)> {
    let mut finite: Vec<f64> = values.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    finite.sort_by(f64::total_cmp);
    (!finite.is_empty()).then(|| (percentile(&finite, 2.0), percentile(&finite, 98.0)))
}

/// The PNG of sampled `values` (rows in array order) under `plan`.
pub fn render(plan: &Plan, values: &[Option<f64>]) -> Vec<u8> {
    let range = value_range(values);
    // The sampled values' grid; each takes scale x scale pixels.
    let k = plan.scale.max(1) as usize;
    let (w, h) = (plan.width as usize / k, plan.height as usize / k);
    let mut raw = Vec::with_capacity(plan.raw_len() as usize);
    for r in 0..h * k {
        let row = if plan.flip { h - 1 - r / k } else { r / k };
        raw.push(0);
        for v in values[row * w..(row + 1) * w]
            .iter()
            .flat_map(|v| std::iter::repeat_n(v, k))
        {
            match (v, range, &plan.window) {
                (Some(v), _, Some(w)) => {
                    let [r, g, b] = w.shade(color_index(*v, w.start, w.end));
                    raw.extend([r, g, b, 255]);
                }
                (Some(v), Some((lo, hi)), None) => {
                    let [r, g, b] = VIRIDIS[color_index(*v, lo, hi)];
                    raw.extend([r, g, b, 255]);
                }
                _ => raw.extend([0, 0, 0, 0]),
            }
        }
    }
    // The range shown is of the values a reader unpacks (CF's
    // scale_factor and add_offset), in the array's units.
    let shown = match (range, plan.unpack) {
        (Some((lo, hi)), Some((scale, offset))) => {
            let (a, b) = (lo * scale + offset, hi * scale + offset);
            Some((a.min(b), a.max(b)))
        }
        (r, _) => r,
    };
    let texts = texts(plan, &range_text(shown));
    let png = encode(plan.width as u32, plan.height as u32, &texts, &raw);
    debug_assert_eq!(png.len() as u64, plan.png_len());
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder's output inflates (flate2) to the scanlines it was
    /// given, its chunks' CRCs check, and its length is the plan's.
    #[test]
    fn stored_deflate_pngs_decode_and_have_the_planned_length() {
        for (w, h) in [(1u64, 1u64), (512, 300), (200, 512), (7, 3)] {
            let plan = Plan {
                width: w,
                height: h,
                stride: 1,
                scale: 1,
                plane: "données[:, :]".into(),
                units: "°C ≈ K".into(),
                unpack: None,
                flip: false,
                window: None,
                image: false,
            };
            let values: Vec<Option<f64>> = (0..w * h).map(|i| (i % 7 != 0).then_some(i as f64)).collect();
            let png = render(&plan, &values);
            assert_eq!(png.len() as u64, plan.png_len());
            // Walk the chunks.
            let mut at = 8;
            let mut idat = Vec::new();
            while at < png.len() {
                let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
                let body = &png[at + 4..at + 8 + len];
                let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
                assert_eq!(crc32fast::hash(body), crc);
                if &body[..4] == b"IDAT" {
                    idat.extend(&body[4..]);
                }
                at += 12 + len;
            }
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&idat[..]), &mut raw).unwrap();
            assert_eq!(raw.len() as u64, h * (1 + 4 * w));
            // Pixel 0 is transparent (a fill), pixel 1 is opaque.
            assert_eq!(raw[1..5], [0, 0, 0, 0]);
            if w > 1 {
                assert_eq!(raw[8], 255);
            }
        }
    }

    /// numpy.percentile([1, 2, 3, 4], [2, 98]) and of 10 values.
    /// A small plane is scaled up by a whole factor: each value a square
    /// of pixels, the long side at least MIN_SIDE and at most MAX_SIDE.
    #[test]
    fn a_small_plane_is_scaled_up_by_a_whole_factor() {
        let plan = Plan {
            width: 3 * 2,
            height: 2 * 2,
            stride: 1,
            scale: 2,
            plane: "p".into(),
            units: String::new(),
            unpack: Some((0.5, 10.0)),
            flip: false,
            window: None,
            image: false,
        };
        let values = vec![Some(1.0), Some(2.0), None, Some(3.0), Some(4.0), Some(5.0)];
        let png = render(&plan, &values);
        assert_eq!(png.len() as u64, plan.png_len());
        // Packed (scale_factor 0.5, add_offset 10): the range shown is of
        // the unpacked values, numpy's percentiles 1.08 and 4.92 of 1..5.
        let at = png.windows(11).position(|w| w == b"nzfs:range\0").unwrap() + 11;
        let text = std::str::from_utf8(&png[at..at + RANGE_WIDTH]).unwrap();
        assert_eq!(text, range_text(Some((10.54, 12.46))), "{text}");
        for (long, want) in [(36u64, 8u64), (18, 15), (256, 1), (300, 1), (2, 128), (513, 1)] {
            let stride = long.div_ceil(MAX_SIDE).max(1);
            let scale = match stride {
                1 => MIN_SIDE.div_ceil(long).min(MAX_SIDE / long).max(1),
                _ => 1,
            };
            assert_eq!(scale, want, "{long}");
            assert!(long.div_ceil(stride) * scale <= MAX_SIDE);
        }
    }

    #[test]
    fn infinities_take_the_ends_of_the_scale_not_the_range() {
        let mut values: Vec<Option<f64>> = (0..100).map(|i| Some(f64::from(i))).collect();
        values.extend([Some(f64::INFINITY), Some(f64::NEG_INFINITY)].repeat(5));
        values.push(None);
        let finite: Vec<f64> = (0..100).map(f64::from).collect();
        let want = (percentile(&finite, 2.0), percentile(&finite, 98.0));
        assert_eq!(value_range(&values), Some(want));
        assert_eq!(color_index(f64::INFINITY, want.0, want.1), 255);
        assert_eq!(color_index(f64::NEG_INFINITY, want.0, want.1), 0);
        assert_eq!(value_range(&[Some(f64::INFINITY), None]), None);
    }

    #[test]
    fn percentiles_are_numpys() {
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 2.0), 1.06);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 98.0), 3.94);
        let ten: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(percentile(&ten, 2.0), 0.18);
        assert_eq!(percentile(&ten, 98.0), 8.82);
        assert_eq!(percentile(&[5.0], 98.0), 5.0);
        assert_eq!(range_text(Some((271.5, -1e-300))).len(), RANGE_WIDTH);
        assert_eq!(range_text(None).len(), RANGE_WIDTH);
    }
}
