//! `index.html`: one page of the whole dataset, each array's preview and
//! header beside its name, from the hierarchy, and the first and last
//! values of each CF time coordinate, as dates ([`super::cftime`]).

use super::{PREVIEW_NAME, attr};
use crate::json::Value;
use crate::naming::markup;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};

/// The width of a time coordinate's dates on the page: `from `, two
/// dates with their times of day (19 characters each) and ` to `.
const DATES_WIDTH: usize = 47;

/// A path as a relative URL (each segment percent-encoded where needed).
fn href(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            seg.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                    b => format!("%{b:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// What [`index_html`] needs of the mount for each node: its path in the
/// mount (as listed), the group's `.nc` name, and whether it has a
/// preview, `data.bin`.
pub struct Shown<'a> {
    /// The node's directory in the mount, as listed.
    pub dir: &'a dyn Fn(usize) -> String,
    /// A group's `.nc` name, if it shows one.
    pub nc: &'a dyn Fn(usize) -> Option<String>,
    /// An array's preview size (width, height), if it has one.
    pub preview: &'a dyn Fn(usize) -> Option<(u64, u64)>,
    /// Whether an array shows `data.bin`.
    pub data_bin: &'a dyn Fn(usize) -> bool,
    /// Whether an array shows `data.tif`.
    pub tiff: &'a dyn Fn(usize) -> bool,
    /// A multiscale image group's OME-TIFF name, if it shows one.
    pub ome: &'a dyn Fn(usize) -> Option<String>,
    /// The first and last values of a 1-D array, if they can be read
    /// (asked only of CF time coordinates; the page's length is the same
    /// whatever this answers).
    pub span: &'a dyn Fn(usize) -> Option<(f64, f64)>,
}

/// The page at the mount root: the group tree, each array's shape, type,
/// dimensions, `units` and `long_name`, its thumbnail and its files
/// (`header.cdl`, `data.bin`, `data.tif`, `preview.png`; a group's `.nc`,
/// an image's OME-TIFF and channel names); no scripts, no network,
/// relative links (it works from `file://`).
pub fn index_html(h: &Hierarchy, title: &str, shown: &Shown) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}\n\
         ul {{ list-style: none; padding-left: 1.2em; }}\n\
         li.array {{ display: flex; gap: 1em; align-items: flex-start; margin: 0.8em 0; }}\n\
         li.array img {{ border: 1px solid #ccc; image-rendering: pixelated; \
         background: repeating-conic-gradient(#eee 0 25%, #fff 0 50%) 0 0 / 16px 16px; }}\n\
         .meta {{ color: #555; font-size: 0.9em; }}\n\
         code {{ background: #f4f4f4; padding: 0 0.2em; }}\n\
         </style>\n</head>\n<body>\n<h1>{t}</h1>\n\
         <p class=\"meta\">Made by nzfs {v} from the dataset's metadata. Each picture is the first 2-D plane of an \
         array in viridis over its 2nd&ndash;98th percentiles; absent chunks, declared missing values and NaN are transparent.</p>\n",
        t = markup(title),
        v = env!("CARGO_PKG_VERSION")
    );
    fn item(h: &Hierarchy, n: usize, shown: &Shown, out: &mut String) {
        let node = &h.nodes[n];
        let dir = (shown.dir)(n);
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", href(&dir))
        };
        match &node.kind {
            NodeKind::Array(a) => {
                let m = &a.metadata;
                let dims: Vec<String> = (0..m.shape.len())
                    .map(|d| {
                        let name = m
                            .dimension_names
                            .get(d)
                            .cloned()
                            .flatten()
                            .unwrap_or_else(|| format!("dim{d}"));
                        format!("{}={}", markup(&name), m.shape[d])
                    })
                    .collect();
                let text = |k: &str| attr(&m.attributes, k).and_then(Value::as_str).map(markup);
                out.push_str("<li class=\"array\">");
                if let Some((w, hgt)) = (shown.preview)(n) {
                    // Shown with its long side between 128 and 256 pixels
                    // (small ones scaled up, pixelated).
                    let long = w.max(hgt).max(1);
                    let side = long.clamp(128, 256);
                    let (dw, dh) = (w * side / long, hgt * side / long);
                    out.push_str(&format!(
                        "<a href=\"{prefix}{PREVIEW_NAME}\"><img src=\"{prefix}{PREVIEW_NAME}\" loading=\"lazy\" \
                         width=\"{}\" height=\"{}\" alt=\"{}\"></a>",
                        dw.max(1),
                        dh.max(1),
                        markup(&node.name)
                    ));
                }
                out.push_str(&format!(
                    "<div><b>{}</b> <span class=\"meta\">{} ({})</span>",
                    markup(&node.name),
                    markup(&m.data_type.name()),
                    dims.join(", ")
                ));
                if let Some(l) = text("long_name") {
                    out.push_str(&format!("<br>{l}"));
                }
                if let Some(u) = text("units") {
                    out.push_str(&format!("<br><span class=\"meta\">units: {u}</span>"));
                }
                // A CF time coordinate: its first and last dates, in a
                // field of fixed width (blank when they cannot be read), so
                // that the page's length follows from the metadata alone.
                if let Some(axis) = super::cftime::axis_of(m) {
                    let dates = (shown.span)(n)
                        .and_then(|(first, last)| Some(format!("from {} to {}", axis.date(first)?, axis.date(last)?)))
                        .unwrap_or_default();
                    out.push_str(&format!("<br><span class=\"meta\">{dates:<DATES_WIDTH$}</span>"));
                }
                out.push_str(&format!("<br><a href=\"{prefix}header.cdl\">header.cdl</a>"));
                if (shown.data_bin)(n) {
                    out.push_str(&format!(" &middot; <a href=\"{prefix}data.bin\">data.bin</a>"));
                }
                if (shown.tiff)(n) {
                    out.push_str(&format!(" &middot; <a href=\"{prefix}data.tif\">data.tif</a>"));
                }
                if (shown.preview)(n).is_some() {
                    out.push_str(&format!(
                        " &middot; <a href=\"{prefix}{PREVIEW_NAME}\">{PREVIEW_NAME}</a>"
                    ));
                }
                out.push_str("</div></li>\n");
            }
            NodeKind::Group { .. } => {
                let name = if n == 0 { "/".to_string() } else { node.name.clone() };
                out.push_str(&format!("<li class=\"group\"><b>{}</b>", markup(&name)));
                out.push_str(&format!(
                    " <span class=\"meta\"><a href=\"{prefix}header.cdl\">header.cdl</a>"
                ));
                if let Some(nc) = (shown.nc)(n) {
                    out.push_str(&format!(
                        " &middot; <a href=\"{prefix}{}\">{}</a>",
                        href(&nc),
                        markup(&nc)
                    ));
                }
                if let Some(ome) = (shown.ome)(n) {
                    out.push_str(&format!(
                        " &middot; <a href=\"{prefix}{}\">{}</a>",
                        href(&ome),
                        markup(&ome)
                    ));
                    // An image's channels by name, as its `omero` labels them.
                    let labels: Vec<String> = h
                        .ngff_image(n)
                        .map(|img| {
                            img.channels
                                .iter()
                                .filter_map(|c| c.label.as_deref())
                                .map(markup)
                                .collect()
                        })
                        .unwrap_or_default();
                    if !labels.is_empty() {
                        out.push_str(&format!(" &middot; channels: {}", labels.join(", ")));
                    }
                }
                out.push_str("</span>\n<ul>\n");
                for &c in &node.children {
                    item(h, c, shown, out);
                }
                out.push_str("</ul></li>\n");
            }
            NodeKind::Broken { reason, .. } => {
                out.push_str(&format!(
                    "<li><b>{}</b> <span class=\"meta\">unreadable: {}</span></li>\n",
                    markup(&node.name),
                    markup(reason)
                ));
            }
        }
    }
    out.push_str("<ul>\n");
    item(h, 0, shown, &mut out);
    out.push_str("</ul>\n</body>\n</html>\n");
    out
}
