//! OME-NGFF images: the names of their arrays' dimensions. An NGFF 0.4
//! image (Zarr v2) gives its levels no dimension names of their own; its
//! group's `multiscales` names the axes (`[{"name": "c", …}, …]`, or in
//! 0.3 plain strings). NGFF 0.5 keeps `multiscales` under `ome`. Each
//! level array named in `datasets` whose dimensions are all unnamed, and
//! whose rank is the number of axes, takes the axes' names, so that
//! `header.cdl` and the `.nc` say `c, z, y, x` instead of
//! `_Anonymous_Dim_L`.
//!
//! Each level also shows its physical size per pixel as attributes:
//! `ome_scale_<axis>` (the level's `scale` transformation) and
//! `ome_units_<axis>` (the axis's `unit`), for each axis of type space or
//! time or with a unit, so that `header.cdl` and the `.nc` say how large
//! a pixel is. [`Hierarchy::ngff_image_of`] finds a level's image, for
//! the views that use its other metadata (`omero` display settings).
//!
//! [`Hierarchy::ngff_image`] gathers what a multiscale image says of
//! itself (axes, levels, level 0's pixel size, channels), for the views
//! that describe a whole image (the OME-TIFF).
//!
//! Invariants: a name the array's own metadata gives is never replaced,
//! nor an attribute it has; a level is named once, and what is copied in
//! all stays within [`MAX_COPIED_BYTES`];
//! the array's `has_dimension_names` (whether its metadata declares them,
//! as NZ-1.0 asks) is left as it is; a document of the wrong shape
//! changes nothing.

use std::sync::Arc;

use super::{Hierarchy, NodeKind};
use crate::json::Value;

/// A level array, its axes' names and its pixel-size attributes.
type Level = (usize, Vec<String>, Vec<(String, Value)>);

/// The most axes an image names (NGFF allows five).
const MAX_AXES: usize = 32;
/// The most bytes of axis names and pixel-size attributes copied to levels
/// in one hierarchy: each level is named once (by the first image that
/// names it), and past this bound levels keep their own names only.
const MAX_COPIED_BYTES: usize = 16 << 20;

impl Hierarchy {
    /// Give the levels of every NGFF multiscale image their axes' names.
    pub(super) fn name_ngff_axes(&mut self) {
        let mut taken = std::collections::HashSet::new();
        let mut copied = 0usize;
        for group in 0..self.nodes.len() {
            let NodeKind::Group { metadata: Some(g) } = &self.nodes[group].kind else {
                continue;
            };
            let Some(list) = ngff_attribute(&g.attributes, "multiscales").and_then(Value::as_array) else {
                continue;
            };
            let mut named: Vec<Level> = Vec::new();
            'images: for image in list {
                let Some(axes) = axis_names(image) else { continue };
                for dataset in image.get("datasets").and_then(Value::as_array).unwrap_or_default() {
                    let Some(path) = dataset.get("path").and_then(Value::as_str) else {
                        continue;
                    };
                    let Some(level) = self.descendant(group, path) else {
                        continue;
                    };
                    let rank_fits =
                        matches!(&self.nodes[level].kind, NodeKind::Array(a) if a.metadata.shape.len() == axes.len());
                    if !rank_fits || !taken.insert(level) {
                        continue;
                    }
                    let attrs = physical(image, dataset, &axes);
                    copied += axes.iter().map(String::len).sum::<usize>()
                        + attrs.iter().map(|(k, v)| k.len() + v.to_string().len()).sum::<usize>();
                    if copied > MAX_COPIED_BYTES {
                        tracing::warn!(
                            group = %self.nodes[group].path,
                            "multiscale axis names past {MAX_COPIED_BYTES} bytes in all: further levels keep their own names"
                        );
                        break 'images;
                    }
                    named.push((level, axes.clone(), attrs));
                }
            }
            for (level, axes, physical) in named {
                if let NodeKind::Array(a) = &mut self.nodes[level].kind {
                    // (Its rank is the number of axes: checked when named.)
                    let m = &a.metadata;
                    let unnamed = m.dimension_names.iter().all(Option::is_none);
                    let new: Vec<(String, Value)> = physical
                        .into_iter()
                        .filter(|(k, _)| !m.attributes.iter().any(|(have, _)| have == k))
                        .collect();
                    let m = &mut Arc::make_mut(a).metadata;
                    if unnamed {
                        m.dimension_names = axes.into_iter().map(Some).collect();
                    }
                    m.attributes.extend(new);
                }
            }
            if copied > MAX_COPIED_BYTES {
                return;
            }
        }
    }

    /// The multiscale image whose `datasets` name array node `n` as one of
    /// its levels: its group and its `multiscales` entry.
    pub fn ngff_image_of(&self, n: usize) -> Option<(usize, &Value)> {
        let mut group = self.nodes.get(n)?.parent;
        // A level is a child of its image group, or nested a little deeper.
        for _ in 0..4 {
            let g = group?;
            if let NodeKind::Group { metadata: Some(m) } = &self.nodes[g].kind
                && let Some(list) = ngff_attribute(&m.attributes, "multiscales").and_then(Value::as_array)
            {
                for image in list {
                    let levels = image.get("datasets").and_then(Value::as_array).unwrap_or_default();
                    if levels.iter().any(|d| {
                        d.get("path")
                            .and_then(Value::as_str)
                            .and_then(|p| self.descendant(g, p))
                            == Some(n)
                    }) {
                        return Some((g, image));
                    }
                }
            }
            group = self.nodes[g].parent;
        }
        None
    }

    /// The first multiscale image of group `group` (the one NGFF readers
    /// show), with the levels that are arrays of as many dimensions as it
    /// has axes, in its order (level 0 first).
    pub fn ngff_image(&self, group: usize) -> Option<NgffImage> {
        let NodeKind::Group { metadata: Some(g) } = &self.nodes.get(group)?.kind else {
            return None;
        };
        let image = ngff_attribute(&g.attributes, "multiscales")?.as_array()?.first()?;
        let names = axis_names(image)?;
        let listed = image.get("axes").and_then(Value::as_array).unwrap_or_default();
        let field = |i: usize, key: &str| listed.get(i)?.get(key)?.as_str().map(str::to_string);
        let axes: Vec<Axis> = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| Axis {
                name,
                kind: field(i, "type"),
                unit: field(i, "unit"),
            })
            .collect();
        let datasets = image.get("datasets").and_then(Value::as_array).unwrap_or_default();
        let levels: Vec<usize> = datasets
            .iter()
            .filter_map(|d| self.descendant(group, d.get("path")?.as_str()?))
            .filter(|&l| matches!(&self.nodes[l].kind, NodeKind::Array(a) if a.metadata.shape.len() == axes.len()))
            .collect();
        // Level 0's scale, times the image's own scale where it has one.
        let scale_of = |v: &Value| -> Option<Vec<f64>> {
            scale_transform(v, axes.len())?
                .iter()
                .map(Value::as_f64)
                .collect::<Option<Vec<f64>>>()
        };
        let scale = datasets.first().and_then(scale_of).map(|level| match scale_of(image) {
            Some(whole) => level.iter().zip(whole).map(|(a, b)| a * b).collect(),
            None => level,
        });
        let channels = ngff_attribute(&g.attributes, "omero")
            .and_then(|o| o.get("channels"))
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .map(|c| Channel {
                label: c.get("label").and_then(Value::as_str).map(str::to_string),
                color: c.get("color").and_then(Value::as_str).map(str::to_string),
            })
            .collect();
        Some(NgffImage {
            name: image.get("name").and_then(Value::as_str).map(str::to_string),
            axes,
            levels,
            scale,
            channels,
        })
    }

    /// The node at `path` (`/`-separated) below `id`.
    fn descendant(&self, id: usize, path: &str) -> Option<usize> {
        path.split('/')
            .filter(|p| !p.is_empty())
            .try_fold(id, |node, name| self.child(node, name))
    }
}

/// What a multiscale image says of itself ([`Hierarchy::ngff_image`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NgffImage {
    /// The multiscale's `name`, if it gives one.
    pub name: Option<String>,
    /// Its axes, in array order.
    pub axes: Vec<Axis>,
    /// Its level arrays, level 0 first.
    pub levels: Vec<usize>,
    /// Level 0's size of a pixel along each axis, when it gives one.
    pub scale: Option<Vec<f64>>,
    /// The `omero` channels' labels and colours (`RRGGBB`).
    pub channels: Vec<Channel>,
}

/// One axis of an image: its name, `type` and `unit` as NGFF gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name (`x`, `y`, `z`, `c`, `t`, or another).
    pub name: String,
    /// Its `type` (`space`, `time`, `channel`).
    pub kind: Option<String>,
    /// Its `unit` (`micrometer`, `second`).
    pub unit: Option<String>,
}

/// One `omero` channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// Its `label`.
    pub label: Option<String>,
    /// Its `color`, `RRGGBB`.
    pub color: Option<String>,
}

/// An NGFF attribute of a group: at the top (0.4) or under `ome` (0.5).
pub fn ngff_attribute<'a>(attrs: &'a [(String, Value)], key: &str) -> Option<&'a Value> {
    let find = |k: &str| attrs.iter().rev().find(|(have, _)| have == k).map(|(_, v)| v);
    find(key).or_else(|| find("ome").and_then(|o| o.get(key)))
}

/// The `scale` of the first scale transformation of `v` (a dataset, or a
/// whole multiscale) when it has one value per axis of `axes`.
fn scale_transform(v: &Value, axes: usize) -> Option<&[Value]> {
    v.get("coordinateTransformations")?
        .as_array()?
        .iter()
        .find(|t| t.get("type").and_then(Value::as_str) == Some("scale"))?
        .get("scale")?
        .as_array()
        .filter(|s| s.len() == axes)
}

/// The attributes that say how large a pixel of one level is: its scale
/// along, and the unit of, each axis of type space or time or with a unit.
fn physical(image: &Value, dataset: &Value, names: &[String]) -> Vec<(String, Value)> {
    let axes = image.get("axes").and_then(Value::as_array).unwrap_or_default();
    let scale = scale_transform(dataset, names.len());
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let axis = axes.get(i);
        let unit = axis.and_then(|a| a.get("unit")).and_then(Value::as_str);
        let kind = axis.and_then(|a| a.get("type")).and_then(Value::as_str);
        if unit.is_none() && !matches!(kind, Some("space" | "time")) {
            continue;
        }
        if let Some(v) = scale.and_then(|s| s[i].as_f64()) {
            out.push((format!("ome_scale_{name}"), Value::Float(v)));
        }
        if let Some(u) = unit {
            out.push((format!("ome_units_{name}"), Value::Str(u.to_string())));
        }
    }
    out
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
