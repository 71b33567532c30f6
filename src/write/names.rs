//! The names a writable mount takes: which file names a commit will take,
//! and which names may become a node's. Every name that reaches a node
//! path in a commit (a new file's stem, a `mkdir`'s name, a variable's
//! name) is checked here, before anything is staged or set.
//!
//! Invariants: a name [`node_name`] accepts is one zarr-python, xarray and
//! nzfs list and open (not empty, not `.` or `..`, no `/` or NUL, not
//! `zarr.json`, no leading `__`, which Zarr v3 reserves); a file name
//! [`file_name`] accepts is one a commit takes, at its close or at its
//! rename to `NAME.nc`, so nothing the mount stages is dropped unseen.

/// Why `name` cannot name a node, or `Ok`.
pub fn node_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name.chars().all(|c| c == '.') {
        "a name of dots only is a path's . or .., not a node"
    } else if name.contains('/') {
        "it holds a /, which separates a path's nodes"
    } else if name.contains('\0') {
        "it holds a NUL byte"
    } else if name == "zarr.json" {
        "zarr.json is a node's metadata document"
    } else if name.starts_with("__") {
        "Zarr v3 reserves names that begin with __"
    } else {
        return Ok(());
    };
    Err(format!(
        "\"{}\" cannot name a Zarr group or array: {why}",
        crate::naming::escaped(name)
    ))
}

/// What a new file's name makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileName<'a> {
    /// `NAME.nc`: the group `NAME`, at its close.
    NetCdf(&'a str),
    /// `NAME.nc.…` (NCO writes `NAME.nc.pid….tmp`, closes it, then renames
    /// it `NAME.nc`): committed only when renamed to `NAME.nc`.
    Temporary(&'a str),
}

/// What the names a commit takes are, for the messages of a refusal.
pub const TAKEN: &str = "a new file is taken as NAME.nc (netCDF classic, which becomes the group NAME at its close) \
     or as a writer's temporary NAME.nc.SUFFIX that it renames to NAME.nc; mkdir NAME makes a group";

/// What a new file `name` becomes, or why no commit would take it.
pub fn file_name(name: &str) -> Result<FileName<'_>, String> {
    if let Some(stem) = name.strip_suffix(".nc") {
        node_name(stem).map_err(|why| format!("{why} (the group a file NAME.nc becomes is NAME)"))?;
        return Ok(FileName::NetCdf(stem));
    }
    match name.split_once(".nc.") {
        Some((stem, rest)) if !rest.is_empty() => {
            node_name(stem).map_err(|why| format!("{why} (the group a file NAME.nc becomes is NAME)"))?;
            Ok(FileName::Temporary(stem))
        }
        _ => Err(format!(
            "\"{}\": no commit takes a file of that name; {TAKEN}",
            crate::naming::escaped(name)
        )),
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
        for bad in [
            "..nc",
            ".nc",
            "zarr.json.nc",
            "__a.nc",
            "notes.txt",
            "out.nc.",
            "x",
            "..nc.pid1.tmp",
        ] {
            assert!(file_name(bad).is_err(), "{bad:?}");
        }
        assert!(file_name("notes.txt").unwrap_err().contains("NAME.nc"));
        assert_eq!(duplicate(["a", "b", "a"]), Some("a"));
        assert_eq!(duplicate(["a", "b"]), None);
    }
}
