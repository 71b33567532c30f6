//! Chunk grids, one [`Axis`] per dimension: the core spec's `regular` grid
//! and zarr-extensions' `rectilinear` grid, whose chunk edge
//! lengths vary along each axis and may be run-length encoded.
//!
//! Invariants: an axis holds only the chunks that overlap the array's
//! extent (a rectilinear grid may declare more; as zarr-python, nzfs does
//! not show them); every edge is > 0; a rectilinear axis is kept as runs
//! of equal edges, never expanded, so `[[1, 1000000000]]` costs one run;
//! an axis whose overlapping chunks all have one edge is [`Axis::Regular`],
//! whatever the document called it. Lookups are a binary search over runs.

use super::extension::{MetadataError, invalid};
use crate::json::Value;

/// `count` chunks of `edge` elements, the first of them chunk `first`,
/// starting at element `start` of the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Elements in each chunk of the run.
    pub edge: u64,
    /// Chunks in the run.
    pub count: u64,
    /// The index of its first chunk.
    pub first: u64,
    /// The element its first chunk starts at.
    pub start: u64,
}

/// The chunks along one dimension of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum Axis {
    /// Every chunk has `edge` elements; `count` is ceil(extent / edge).
    Regular {
        /// Elements in each chunk (the last may extend past the extent).
        edge: u64,
        /// Chunks along the axis.
        count: u64,
    },
    /// Runs of chunks in order, covering the extent (at least two edges).
    Runs(Box<[Run]>),
}

impl Axis {
    /// The regular axis of an extent cut in chunks of `edge` (> 0).
    pub fn regular(extent: u64, edge: u64) -> Axis {
        Axis::Regular {
            edge,
            count: extent.div_ceil(edge),
        }
    }

    /// The number of chunks along the axis.
    pub fn count(&self) -> u64 {
        match self {
            Axis::Regular { count, .. } => *count,
            Axis::Runs(runs) => runs.last().map_or(0, |r| r.first + r.count),
        }
    }

    fn run_of(runs: &[Run], chunk: u64) -> &Run {
        let i = runs.partition_point(|r| r.first + r.count <= chunk);
        &runs[i.min(runs.len() - 1)]
    }

    /// The edge length of chunk `i` (its length in the store, which for
    /// the last chunk may reach past the array's extent).
    pub fn edge(&self, i: u64) -> u64 {
        match self {
            Axis::Regular { edge, .. } => *edge,
            Axis::Runs(runs) => Self::run_of(runs, i).edge,
        }
    }

    /// The first element of chunk `i`.
    pub fn start(&self, i: u64) -> u64 {
        match self {
            Axis::Regular { edge, .. } => i * edge,
            Axis::Runs(runs) => {
                let r = Self::run_of(runs, i);
                r.start + (i - r.first) * r.edge
            }
        }
    }

    /// The chunk holding element `pos`, and `pos`'s offset in it.
    pub fn locate(&self, pos: u64) -> (u64, u64) {
        match self {
            Axis::Regular { edge, .. } => (pos / edge, pos % edge),
            Axis::Runs(runs) => {
                let i = runs.partition_point(|r| r.start.saturating_add(r.count.saturating_mul(r.edge)) <= pos);
                let r = &runs[i.min(runs.len() - 1)];
                let into = pos - r.start;
                (r.first + into / r.edge, into % r.edge)
            }
        }
    }

    /// The longest edge.
    pub fn max_edge(&self) -> u64 {
        match self {
            Axis::Regular { edge, .. } => *edge,
            Axis::Runs(runs) => runs.iter().map(|r| r.edge).max().unwrap_or(1),
        }
    }

    /// Each distinct run as `edge x count`, for headers (`[[4, 2], 3]` is
    /// `4x2 3`).
    pub fn describe(&self) -> String {
        match self {
            Axis::Regular { edge, count } => format!("{edge}x{count}"),
            Axis::Runs(runs) => runs
                .iter()
                .map(|r| match r.count {
                    1 => r.edge.to_string(),
                    n => format!("{}x{n}", r.edge),
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// Whether every axis is regular: chunks of one shape.
pub fn is_regular(axes: &[Axis]) -> bool {
    axes.iter().all(|a| matches!(a, Axis::Regular { .. }))
}

/// The axes of a `rectilinear` grid's `configuration` over an array of
/// `shape`.
pub fn rectilinear(configuration: Option<&Value>, shape: &[u64]) -> Result<Vec<Axis>, MetadataError> {
    let bad = |reason: String| invalid("chunk_grid", reason);
    let config = configuration.ok_or_else(|| bad("rectilinear grid without `configuration`".into()))?;
    match config.get("kind").and_then(Value::as_str) {
        Some("inline") => {}
        Some(other) => return Err(bad(format!("rectilinear `kind` {other:?} is not \"inline\""))),
        None => return Err(bad("rectilinear grid without `kind`".into())),
    }
    let shapes = config
        .get("chunk_shapes")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("rectilinear grid without a `chunk_shapes` list".into()))?;
    if shapes.len() != shape.len() {
        return Err(bad(format!(
            "chunk_shapes has {} dimensions, shape has {}",
            shapes.len(),
            shape.len()
        )));
    }
    let positive = |v: &Value, what: &str, d: usize| {
        v.as_u64()
            .filter(|&n| n > 0)
            .ok_or_else(|| bad(format!("dimension {d}: {what} {v} is not a positive integer")))
    };
    shapes
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(d, (spec, &extent))| {
            let items = match spec {
                Value::Array(items) => items,
                v => return Ok(Axis::regular(extent, positive(v, "edge", d)?)),
            };
            // (edge, count) pairs as written, merged while equal, cut at
            // the first chunk that starts at or past the extent.
            let mut runs: Vec<Run> = Vec::new();
            let (mut next, mut at) = (0u64, 0u64);
            for item in items {
                let (edge, count) = match item {
                    Value::Array(pair) if pair.len() == 2 => {
                        (positive(&pair[0], "edge", d)?, positive(&pair[1], "run length", d)?)
                    }
                    Value::Array(_) => {
                        return Err(bad(format!("dimension {d}: a run must be [edge, count], not {item}")));
                    }
                    v => (positive(v, "edge", d)?, 1),
                };
                if at >= extent {
                    continue; // past the array: validated, not kept
                }
                let count = count.min((extent - at).div_ceil(edge));
                match runs.last_mut() {
                    Some(r) if r.edge == edge => r.count += count,
                    _ => runs.push(Run {
                        edge,
                        count,
                        first: next,
                        start: at,
                    }),
                }
                next += count;
                at = at.saturating_add(count.saturating_mul(edge));
            }
            if at < extent {
                return Err(bad(format!(
                    "dimension {d}: the chunk edges sum to {at}, less than the extent {extent}"
                )));
            }
            Ok(match runs.as_slice() {
                [] => Axis::Regular { edge: 1, count: 0 },
                [r] => Axis::Regular {
                    edge: r.edge,
                    count: r.count,
                },
                _ => Axis::Runs(runs.into_boxed_slice()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(json: &str, shape: &[u64]) -> Result<Vec<Axis>, MetadataError> {
        let v = crate::json::parse(json.as_bytes()).unwrap();
        rectilinear(Some(&v), shape)
    }

    /// The spec's example, expanded by hand from its comments.
    #[test]
    fn the_spec_example_expands_as_its_comments_say() {
        let a = axes(
            r#"{"kind": "inline", "chunk_shapes": [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]}"#,
            &[6, 6, 6, 6, 6],
        )
        .unwrap();
        let edges = |ax: &Axis| (0..ax.count()).map(|i| ax.edge(i)).collect::<Vec<_>>();
        assert_eq!(edges(&a[0]), [4, 4]);
        assert_eq!(edges(&a[1]), [1, 2, 3]);
        assert_eq!(edges(&a[2]), [4, 4]);
        assert_eq!(edges(&a[3]), [1, 1, 1, 3]);
        // [4, 4, 4] over 6: the third chunk starts past the extent.
        assert_eq!(edges(&a[4]), [4, 4]);
        assert!(matches!(a[2], Axis::Regular { edge: 4, count: 2 }));
    }

    /// Every element maps to the chunk whose span holds it, checked
    /// against a plain expansion.
    #[test]
    fn locate_and_start_agree_with_an_expanded_list() {
        let a = axes(
            r#"{"kind": "inline", "chunk_shapes": [[[2, 3], 5, [1, 2], 7, [3, 4]]]}"#,
            &[30],
        )
        .unwrap();
        // The last run is cut where the chunks cover 30: 20 + 4 x 3.
        let expanded = [2u64, 2, 2, 5, 1, 1, 7, 3, 3, 3, 3];
        assert_eq!(a[0].count(), 11);
        let mut start = 0;
        for (i, &e) in expanded.iter().enumerate() {
            assert_eq!(a[0].start(i as u64), start);
            assert_eq!(a[0].edge(i as u64), e);
            for k in 0..e.min(30 - start) {
                assert_eq!(a[0].locate(start + k), (i as u64, k));
            }
            start += e;
        }
        assert_eq!(a[0].max_edge(), 7);
    }

    #[test]
    fn huge_runs_stay_runs_and_short_or_bad_grids_are_refused() {
        let a = axes(
            r#"{"kind": "inline", "chunk_shapes": [[[1, 1000000000000], 5]]}"#,
            &[10],
        )
        .unwrap();
        assert!(matches!(a[0], Axis::Regular { edge: 1, count: 10 }));
        let a = axes(
            r#"{"kind": "inline", "chunk_shapes": [[3, [1, 18446744073709551615]]]}"#,
            &[1 << 40],
        )
        .unwrap();
        assert_eq!(a[0].count(), (1 << 40) - 2);
        assert_eq!(a[0].locate((1 << 40) - 1), ((1 << 40) - 3, 0));
        for bad in [
            r#"{"kind": "inline", "chunk_shapes": [[1, 2]]}"#,
            r#"{"kind": "inline", "chunk_shapes": [[0, 10]]}"#,
            r#"{"kind": "inline", "chunk_shapes": [[[2, 0], 10]]}"#,
            r#"{"kind": "inline", "chunk_shapes": [[[2, 3, 4]]]}"#,
            r#"{"kind": "inline", "chunk_shapes": [0]}"#,
            r#"{"kind": "other", "chunk_shapes": [10]}"#,
            r#"{"chunk_shapes": [10]}"#,
            r#"{"kind": "inline", "chunk_shapes": [10, 10]}"#,
        ] {
            assert!(axes(bad, &[10]).is_err(), "{bad}");
        }
        // A zero extent has no chunks.
        assert_eq!(
            axes(r#"{"kind": "inline", "chunk_shapes": [[4, 4]]}"#, &[0]).unwrap()[0].count(),
            0
        );
    }
}
