//! The names a writable mount takes: which file names a commit will take,
//! and which names may become a node's. Every name that reaches a node
//! path in a commit (a new file's stem, a `mkdir`'s name, a variable's
//! name) is checked here, before anything is staged or set.
//!
//! Each refusal is a [`NameError`], which the mount core turns into the
//! filesystem's error (`EINVAL`), naming the path.
//!
//! Invariants: a name [`node_name`] accepts is one zarr-python, xarray and
//! nzfs list and open (not empty, not `.` or `..`, no `/` or NUL, not
//! `zarr.json`, no leading `__`, which Zarr v3 reserves); a file name
//! [`file_name`] accepts is one a commit takes, at its close or at its
//! rename to `NAME.nc`, so nothing the mount stages is dropped unseen.

use crate::zarr::documents::ZARR_JSON;

/// Why a name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// No Zarr reader lists a node of that name (the name, escaped; why).
    #[error("\"{0}\" cannot name a Zarr group or array: {1}")]
    NotANode(String, &'static str),
    /// A file whose group `NAME` would be no node (the name, escaped; why).
    #[error("\"{0}\" cannot name a Zarr group or array: {1} (the group a file NAME.nc becomes is NAME)")]
    NotAGroup(String, &'static str),
    /// No commit takes a file of that name (escaped).
    #[error("\"{0}\": no commit takes a file of that name; {TAKEN}")]
    NotTaken(String),
    /// `mkdir NAME.nc` (escaped): that name is a file's.
    #[error("\"{0}\": a name NAME.nc is a file's; {TAKEN}")]
    FileName(String),
    /// Zarr's names are UTF-8.
    #[error("the name is not UTF-8, which Zarr's names are")]
    NotUtf8,
}

/// Why `name` cannot name a node: the reason, or `None`.
fn not_a_node(name: &str) -> Option<&'static str> {
    Some(if name.is_empty() {
        "it is empty"
    } else if name.chars().all(|c| c == '.') {
        "a name of dots only is a path's . or .., not a node"
    } else if name.contains('/') {
        "it holds a /, which separates a path's nodes"
    } else if name.contains('\0') {
        "it holds a NUL byte"
    } else if name == ZARR_JSON {
        "zarr.json is a node's metadata document"
    } else if name.starts_with("__") {
        "Zarr v3 reserves names that begin with __"
    } else {
        return None;
    })
}

/// Whether `name` may name a node, or why not.
pub fn node_name(name: &str) -> Result<(), NameError> {
    match not_a_node(name) {
        None => Ok(()),
        Some(why) => Err(NameError::NotANode(crate::naming::escaped(name), why)),
    }
}

/// The endings of the names a new file is taken by: netCDF (classic or
/// netCDF-4) and HDF5 (as h5py writes it, read as netCDF-4 reads it).
pub const ENDINGS: [&str; 2] = [".nc", ".h5"];

/// The group that a file named `name` becomes at its close: `NAME` of
/// `NAME.nc` or `NAME.h5`; `None` for any other name (a temporary one).
pub fn group_of(name: &str) -> Option<&str> {
    ENDINGS.iter().find_map(|e| name.strip_suffix(e))
}

/// What a new file's name makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileName<'a> {
    /// `NAME.nc` (or `NAME.h5`): the group `NAME`, at its close.
    NetCdf(&'a str),
    /// `NAME.nc.…` (NCO writes `NAME.nc.pid….tmp`, closes it, then renames
    /// it `NAME.nc`; or `NAME.h5.…`): committed only when renamed to
    /// `NAME.nc` (or `NAME.h5`).
    Temporary(&'a str),
}

/// What the names a commit takes are, for the messages of a refusal.
pub const TAKEN: &str = "a new file is taken as NAME.nc (netCDF, classic or netCDF-4, which becomes the group NAME at its close) \
     or NAME.h5 (HDF5, as h5py writes it), or as a writer's temporary NAME.nc.SUFFIX that it renames to NAME.nc; \
     mkdir NAME makes a group";

/// What a new file `name` becomes, or why no commit would take it.
pub fn file_name(name: &str) -> Result<FileName<'_>, NameError> {
    let temporary = || {
        ENDINGS.iter().find_map(|e| {
            name.split_once(&format!("{e}."))
                .filter(|(_, rest)| !rest.is_empty())
                .map(|(stem, _)| stem)
        })
    };
    let (stem, named) = match (group_of(name), temporary()) {
        (Some(stem), _) => (stem, FileName::NetCdf(stem)),
        (None, Some(stem)) => (stem, FileName::Temporary(stem)),
        _ => return Err(NameError::NotTaken(crate::naming::escaped(name))),
    };
    match not_a_node(stem) {
        None => Ok(named),
        Some(why) => Err(NameError::NotAGroup(crate::naming::escaped(stem), why)),
    }
}

/// Whether `mkdir name` may make a group of that name, or why not.
pub fn group_name(name: &str) -> Result<(), NameError> {
    node_name(name)?;
    match group_of(name) {
        Some(_) => Err(NameError::FileName(crate::naming::escaped(name))),
        None => Ok(()),
    }
}

/// The first name of `names` that is there twice, if any.
pub fn duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_break_a_branch_are_refused_and_others_taken() {
        for bad in ["", ".", "..", "...", "a/b", "a\0b", "zarr.json", "__x"] {
            assert!(node_name(bad).is_err(), "{bad:?}");
        }
        for good in ["t2m", ".hidden", "a.b", "zarr.json.bak", "_x", "été"] {
            assert!(node_name(good).is_ok(), "{good:?}");
        }
        assert_eq!(file_name("out.nc"), Ok(FileName::NetCdf("out")));
        assert_eq!(file_name("out.nc.pid42.ncks.tmp"), Ok(FileName::Temporary("out")));
        assert_eq!(file_name("out.h5"), Ok(FileName::NetCdf("out")));
        assert_eq!(file_name("out.h5.tmp"), Ok(FileName::Temporary("out")));
        for bad in [
            "..nc",
            ".nc",
            "zarr.json.nc",
            "__a.nc",
            "notes.txt",
            "out.nc.",
            "x",
            "..nc.pid1.tmp",
            "..h5",
            "out.hdf5",
        ] {
            assert!(file_name(bad).is_err(), "{bad:?}");
        }
        assert!(file_name("notes.txt").unwrap_err().to_string().contains("NAME.nc"));
        assert!(group_name("y.nc").is_err() && group_name("y.h5").is_err() && group_name("y").is_ok());
        assert_eq!(duplicate(["a", "b", "a"]), Some("a"));
        assert_eq!(duplicate(["a", "b"]), None);
    }
}
