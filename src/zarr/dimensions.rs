//! The dimensions of one group, as NZ scopes them: a label names one
//! dimension within its group (NZ, "Dimension").
//!
//! Shared by the CDL header and the virtual netCDF file so that both name
//! the same dimensions the same way: an unnamed dimension of length L is
//! `_Anonymous_Dim_L` (netCDF-C's NCZarr spelling); a label reused in one
//! group with another length (which NZ forbids, but stores do it) is
//! `label_L` for the later length. Dimensions keep first-seen order.
//!
//! Names are netCDF names ([`crate::naming::netcdf`]), unique in the group:
//! a label that cleans to a name another dimension has gets `_L`, then
//! `_nz2`, `_nz3`, ...

use super::metadata::ArrayMetadata;

/// One netCDF dimension of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
    /// The name to write: a netCDF name (before CDL's escaping).
    pub name: String,
    /// The `dimension_names` entry it stands for.
    pub label: Option<String>,
    /// Its length.
    pub len: u64,
}

/// The dimensions a group declares, in declaration order.
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
        let mut dims = GroupDimensions(Vec::new());
        for (label, len) in declared {
            let name = dims.free_name(crate::naming::netcdf(label), *len);
            dims.0.push(Dimension {
                name,
                label: Some(label.clone()),
                len: *len,
            });
        }
        for a in arrays {
            for (label, &len) in a.dimension_names.iter().zip(&a.shape) {
                if dims.index(label.as_deref(), len).is_none() {
                    let base = label.clone().unwrap_or_else(|| format!("_Anonymous_Dim_{len}"));
                    let name = dims.free_name(crate::naming::netcdf(&base), len);
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

    /// `name`, or when a dimension has it, `name_L`, then `name_nz2`, ...
    fn free_name(&self, name: String, len: u64) -> String {
        let taken = |n: &str| self.0.iter().any(|d| d.name == n);
        if !taken(&name) {
            return name;
        }
        let with_len = crate::naming::with_suffix(&name, &format!("_{len}"));
        if !taken(&with_len) {
            return with_len;
        }
        (2u64..)
            .map(|k| crate::naming::with_suffix(&name, &format!("_nz{k}")))
            .find(|n| !taken(n))
            .expect("a free name")
    }

    /// The dimensions whose name is not their label (cleaned or told
    /// apart): `(name, label)`, for `_nz_renamed_dimensions`.
    pub fn renamed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().filter_map(|d| {
            let label = d.label.as_deref()?;
            (d.name != label).then_some((label, d.name.as_str()))
        })
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
