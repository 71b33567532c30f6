//! The dimensions of one group, as NZ scopes them: a label names one
//! dimension within its group (NZ, "Dimension").
//!
//! Shared by the CDL header and the virtual netCDF file so that both name
//! the same dimensions the same way: an unnamed dimension of length L is
//! `_Anonymous_Dim_L` (netCDF-C's NCZarr spelling); a label reused in one
//! group with another length (which NZ forbids, but stores do it) is
//! `label_L` for the later length. Dimensions keep first-seen order.

use super::metadata::ArrayMetadata;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
    /// The name to write (before any format's escaping).
    pub name: String,
    /// The `dimension_names` entry it stands for.
    pub label: Option<String>,
    pub len: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDimensions(pub Vec<Dimension>);

impl GroupDimensions {
    /// The dimensions the arrays of one group use.
    pub fn of<'a>(arrays: impl Iterator<Item = &'a ArrayMetadata>) -> Self {
        Self::of_declared(&[], arrays)
    }

    /// The dimensions a group declares itself (NCZarr's group dimensions,
    /// first, in their order), then those its arrays use.
    pub fn of_declared<'a>(declared: &[(String, u64)], arrays: impl Iterator<Item = &'a ArrayMetadata>) -> Self {
        let mut dims = GroupDimensions(
            declared
                .iter()
                .map(|(name, len)| Dimension {
                    name: name.clone(),
                    label: Some(name.clone()),
                    len: *len,
                })
                .collect(),
        );
        for a in arrays {
            for (label, &len) in a.dimension_names.iter().zip(&a.shape) {
                if dims.index(label.as_deref(), len).is_none() {
                    let base = label.clone().unwrap_or_else(|| format!("_Anonymous_Dim_{len}"));
                    let name = if dims.0.iter().any(|d| d.name == base) {
                        format!("{base}_{len}")
                    } else {
                        base
                    };
                    dims.0.push(Dimension {
                        name,
                        label: label.clone(),
                        len,
                    });
                }
            }
        }
        dims
    }

    /// The position of the dimension for `label` of length `len`.
    pub fn index(&self, label: Option<&str>, len: u64) -> Option<usize> {
        self.0.iter().position(|d| d.label.as_deref() == label && d.len == len)
    }

    /// The dimension positions of each axis of `a` (which was given to `of`).
    pub fn of_array(&self, a: &ArrayMetadata) -> Vec<usize> {
        a.dimension_names
            .iter()
            .zip(&a.shape)
            .map(|(l, &n)| self.index(l.as_deref(), n).expect("every dimension was collected"))
            .collect()
    }
}
