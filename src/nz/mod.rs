//! NZ-1.0 conformance (shared/specs/nz/README.md, "Normative Summary").
//!
//! [`check`] turns an opened [`Dataset`] into [`Finding`]s: a broken
//! MUST is an error, a broken SHOULD a warning. Where the convention's
//! `schema.json` disagrees with its README, the README wins (the
//! declaration is the `conventions` attribute; `zarr_conventions` is not
//! required).
//!
//! Decisions, documented in docs/usage.md:
//! - a 0-d array without `dimension_names` is taken as `[]` (xarray writes
//!   scalars that way);
//! - an array that qualifies structurally as a dimension coordinate (1-D,
//!   its dimension named like itself) but whose values are not strictly
//!   monotonic is a warning: it is then simply not a dimension coordinate;
//! - `conventions` anywhere but the root group, or `_FillValue` on a group,
//!   is an error (rule 6, reserved names).
//!
//! One module per group of rules: `metadata` (declaration, names,
//! attributes, shared dimensions: the parsed documents alone),
//! `consolidated` (consolidated metadata against the store), `values`
//! (coordinate values, read through the array layer); `report` renders.

mod consolidated;
mod metadata;
mod report;
mod values;

use crate::array::Dataset;
use crate::zarr::hierarchy::NodeKind;
use consolidated::check_consolidated;
use metadata::{
    check_array, check_attributes, check_case_collisions, check_declaration, check_name, check_shared_dimensions,
};
pub use report::{to_json, to_text};
use values::check_monotonic;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Conforming, but a reader would do better with it changed.
    Warning,
    /// Not conforming.
    Error,
}

impl Severity {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding: where, which rule, what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// Hierarchy path with a leading `/` (`/` for the root).
    pub path: String,
    /// A short rule name, e.g. `shared-dimension`.
    pub rule: &'static str,
    /// Where the convention states it, e.g. `NZ §Dimension`.
    pub section: &'static str,
    /// What the rule wants.
    pub expected: String,
    /// What the store has.
    pub found: String,
}

struct Checker<'a> {
    dataset: &'a Dataset,
    findings: Vec<Finding>,
    /// Findings kept per severity ([`Scope::keep`]); the rest are counted
    /// in `omitted` (warnings, errors).
    keep: usize,
    kept: [usize; 2],
    omitted: [usize; 2],
    /// Arrays that qualify as dimension coordinates (values not refuted).
    coordinates: Vec<String>,
}

/// What `nzfs check` reports.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The findings kept, in hierarchy order.
    pub findings: Vec<Finding>,
    /// Paths of the dimension coordinate arrays: structurally qualified and,
    /// when values were read, strictly monotonic.
    pub dimension_coordinates: Vec<String>,
    /// The store's Zarr format (2 or 3).
    pub zarr_format: u8,
    /// Findings counted but not kept (past [`Scope::keep`]): warnings, errors.
    pub omitted: [usize; 2],
}

impl Report {
    /// Whether the store declares NZ-1.0 (its root `conventions` holds the
    /// token): findings are conformance errors only then; otherwise they
    /// say what declaring it would need.
    pub fn declared(&self) -> bool {
        !self.findings.iter().any(|f| f.rule == "convention-declaration")
    }

    /// The errors that make the store fail the check: every one when it
    /// declares NZ-1.0; otherwise only nodes that are not valid Zarr
    /// (`zarr-v3-valid`), which no convention excuses.
    pub fn failures(&self) -> usize {
        match self.declared() {
            true => self.errors(),
            false => self.findings.iter().filter(|f| counts_undeclared(f)).count(),
        }
    }

    /// Errors found, omitted ones included.
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Error).count() + self.omitted[1]
    }

    /// Warnings found, omitted ones included.
    pub fn warnings(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Warning).count() + self.omitted[0]
    }
}

/// Whether finding `f` is an error in a store that does not declare
/// NZ-1.0: a node that is not valid Zarr.
pub fn counts_undeclared(f: &Finding) -> bool {
    f.severity == Severity::Error && f.rule == "zarr-v3-valid"
}

fn display_path(p: &str) -> String {
    format!("/{p}")
}

impl Checker<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        severity: Severity,
        path: &str,
        rule: &'static str,
        section: &'static str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) {
        let k = severity as usize;
        if self.kept[k] >= self.keep {
            self.omitted[k] += 1;
            return;
        }
        self.kept[k] += 1;
        self.findings.push(Finding {
            severity,
            path: display_path(path),
            rule,
            section,
            expected: expected.into(),
            found: found.into(),
        });
    }
}

/// How far `check` goes beyond the parsed metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// Read dimension coordinate values to confirm they are monotonic.
    pub read_values: bool,
    /// Read every `zarr.json` and list the store to compare them with
    /// consolidated metadata.
    pub read_store: bool,
    /// Findings kept of each severity; the rest are only counted (the
    /// check at mount keeps a few, so a million nonconforming names cost no
    /// memory).
    pub keep: usize,
}

impl Scope {
    /// Everything (`nzfs check`).
    pub const FULL: Scope = Scope {
        read_values: true,
        read_store: true,
        keep: usize::MAX,
    };
    /// The parsed metadata only: what a mount can afford.
    pub const METADATA: Scope = Scope {
        read_values: false,
        read_store: false,
        keep: 16,
    };
}

/// Check `dataset`. Dimension coordinate arrays are read (when
/// the scope says so) to confirm they are strictly monotonic; `progress` is
/// told `(done, total)` as they are.
pub fn check(dataset: &Dataset, scope: Scope, progress: &mut dyn FnMut(usize, usize)) -> Report {
    let read_values = scope.read_values;
    let mut c = Checker {
        dataset,
        findings: Vec::new(),
        keep: scope.keep,
        kept: [0; 2],
        omitted: [0; 2],
        coordinates: Vec::new(),
    };
    let h = dataset.hierarchy();
    check_declaration(&mut c);
    let mut coordinates = Vec::new();
    for (id, node) in h.nodes.iter().enumerate() {
        match &node.kind {
            NodeKind::Broken { reason, .. } => c.add(
                Severity::Error,
                &node.path,
                "zarr-v3-valid",
                "NZ §Normative Summary 1",
                "a valid Zarr v3 node",
                reason.clone(),
            ),
            NodeKind::Array(a) => {
                // No decoder (an unknown codec): its header is readable,
                // and the check names why its values are not.
                if let Some(reason) = dataset.undecodable(id) {
                    c.add(
                        Severity::Error,
                        &node.path,
                        "zarr-v3-valid",
                        "NZ §Normative Summary 1",
                        "a valid Zarr v3 node",
                        reason.to_string(),
                    );
                }
                check_array(&mut c, &node.path, &a.metadata);
                let m = &a.metadata;
                if m.shape.len() == 1 && m.dimension_names[0].as_deref() == Some(node.name.as_str()) {
                    coordinates.push(id);
                }
            }
            NodeKind::Group { metadata } => {
                if let Some(g) = metadata {
                    check_attributes(&mut c, &node.path, &g.attributes, id == 0, false);
                }
                check_shared_dimensions(&mut c, id);
            }
        }
        if id > 0 {
            check_name(&mut c, &node.path, &node.name, "node");
        }
    }
    check_case_collisions(&mut c);
    if scope.read_store {
        check_consolidated(&mut c);
    }
    let total = coordinates.len();
    for (done, id) in coordinates.into_iter().enumerate() {
        if read_values {
            progress(done, total);
            if !check_monotonic(&mut c, id) {
                continue;
            }
        }
        c.coordinates.push(display_path(&h.nodes[id].path));
    }
    if read_values {
        progress(total, total);
    }
    c.findings
        .sort_by(|a, b| b.severity.cmp(&a.severity).then(a.path.cmp(&b.path)));
    Report {
        findings: c.findings,
        dimension_coordinates: c.coordinates,
        zarr_format: dataset.hierarchy().zarr_format,
        omitted: c.omitted,
    }
}
