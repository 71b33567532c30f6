//! OME-NGFF images: the names of their arrays' dimensions. An NGFF 0.4
//! image (Zarr v2) gives its levels no dimension names of their own; its
//! group's `multiscales` names the axes (`[{"name": "c", …}, …]`, or in
//! 0.3 plain strings). NGFF 0.5 keeps `multiscales` under `ome`. Each
//! level array named in `datasets` whose dimensions are all unnamed, and
//! whose rank is the number of axes, takes the axes' names, so that
//! `header.cdl` and the `.nc` say `c, z, y, x` instead of
//! `_Anonymous_Dim_L`.
//!
//! Invariants: a name the array's own metadata gives is never replaced;
//! the array's `has_dimension_names` (whether its metadata declares them,
//! as NZ-1.0 asks) is left as it is; a document of the wrong shape
//! changes nothing.

use std::sync::Arc;

use super::{Hierarchy, NodeKind};
use crate::json::Value;

/// The most axes an image names (NGFF allows five).
const MAX_AXES: usize = 32;

impl Hierarchy {
    /// Give the levels of every NGFF multiscale image their axes' names.
    pub(super) fn name_ngff_axes(&mut self) {
        for group in 0..self.nodes.len() {
            let NodeKind::Group { metadata: Some(g) } = &self.nodes[group].kind else {
                continue;
            };
            let attrs = &g.attributes;
            let find = |k: &str| attrs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v);
            let multiscales = find("multiscales").or_else(|| find("ome").and_then(|o| o.get("multiscales")));
            let Some(list) = multiscales.and_then(Value::as_array) else {
                continue;
            };
            let mut named: Vec<(usize, Vec<String>)> = Vec::new();
            for image in list {
                let Some(axes) = axis_names(image) else { continue };
                for dataset in image.get("datasets").and_then(Value::as_array).unwrap_or_default() {
                    let Some(path) = dataset.get("path").and_then(Value::as_str) else {
                        continue;
                    };
                    if let Some(level) = self.descendant(group, path) {
                        named.push((level, axes.clone()));
                    }
                }
            }
            for (level, axes) in named {
                if let NodeKind::Array(a) = &mut self.nodes[level].kind {
                    let m = &a.metadata;
                    if m.shape.len() == axes.len() && m.dimension_names.iter().all(Option::is_none) {
                        Arc::make_mut(a).metadata.dimension_names = axes.into_iter().map(Some).collect();
                    }
                }
            }
        }
    }

    /// The node at `path` (`/`-separated) below `id`.
    fn descendant(&self, id: usize, path: &str) -> Option<usize> {
        path.split('/')
            .filter(|p| !p.is_empty())
            .try_fold(id, |node, name| self.child(node, name))
    }
}

/// The axis names of one multiscale image: `axes` as objects with a `name`
/// (0.4, 0.5) or as strings (0.3).
fn axis_names(image: &Value) -> Option<Vec<String>> {
    let axes = image.get("axes")?.as_array()?;
    if axes.is_empty() || axes.len() > MAX_AXES {
        return None;
    }
    axes.iter()
        .map(|a| a.as_str().or_else(|| a.get("name")?.as_str()).map(str::to_string))
        .collect()
}
