//! The display settings an OME-NGFF image gives its channels (`omero`):
//! a preview of one of its levels shows the plane at leading indices 0,
//! which is channel 0, in that channel's colour over its window (black at
//! `start`, the colour at `end`), as OME viewers show it, instead of
//! viridis over the plane's percentiles.
//!
//! Invariants: only a usable setting is taken (a window whose `start` and
//! `end` are finite numbers with `end > start`; a colour of six hex digits,
//! white where it has none); anything else leaves the viridis preview.

use crate::json::Value;
use crate::zarr::hierarchy::{Hierarchy, ngff_attribute};

/// Channel 0's display window and colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub start: f64,
    pub end: f64,
    pub color: [u8; 3],
    /// The channel's label, if it has one.
    pub label: String,
}

impl Window {
    /// The colour of a value at `index` (0..=255) of the window.
    pub fn shade(&self, index: usize) -> [u8; 3] {
        self.color.map(|c| ((u32::from(c) * index as u32 + 127) / 255) as u8)
    }

    /// How the preview's colours are chosen, for its text chunk.
    pub fn describe(&self) -> String {
        let [r, g, b] = self.color;
        format!(
            "omero channel 0{}: black at {} to #{r:02X}{g:02X}{b:02X} at {}; absent chunks and NaN transparent",
            if self.label.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.label)
            },
            self.start,
            self.end
        )
    }
}

/// Channel 0's window of the NGFF image that array node `n` is a level
/// of, if the image has a usable one.
pub fn window(h: &Hierarchy, n: usize) -> Option<Window> {
    let (group, _) = h.ngff_image_of(n)?;
    let crate::zarr::hierarchy::NodeKind::Group { metadata: Some(g) } = &h.nodes[group].kind else {
        return None;
    };
    let channel = ngff_attribute(&g.attributes, "omero")?
        .get("channels")?
        .as_array()?
        .first()?;
    let window = channel.get("window")?;
    let (start, end) = (window.get("start")?.as_f64()?, window.get("end")?.as_f64()?);
    if !(start.is_finite() && end.is_finite() && end > start) {
        return None;
    }
    let color = match channel.get("color") {
        None => [255; 3],
        Some(c) => hex_color(c.as_str()?)?,
    };
    let label = channel.get("label").and_then(Value::as_str).unwrap_or_default();
    Some(Window {
        start,
        end,
        color,
        label: label.chars().filter(|c| !c.is_control()).take(64).collect(),
    })
}

/// `RRGGBB` as bytes.
fn hex_color(s: &str) -> Option<[u8; 3]> {
    if s.len() != 6 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&s[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_shades() {
        assert_eq!(hex_color("00FF80"), Some([0, 255, 128]));
        assert_eq!(hex_color("0xFF00"), None);
        assert_eq!(hex_color("FFF"), None);
        let w = Window {
            start: 0.0,
            end: 1.0,
            color: [0, 255, 128],
            label: String::new(),
        };
        assert_eq!(
            (w.shade(0), w.shade(255), w.shade(128)),
            ([0, 0, 0], [0, 255, 128], [0, 128, 64])
        );
    }
}
