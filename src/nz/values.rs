//! NZ-1.0 rule on values: a dimension coordinate's values are strictly
//! monotonic. Values are read through the array layer.

use std::fmt::Write;

use super::{Checker, Severity};

/// Whether coordinate array `id` holds strictly monotonic values.
pub(super) fn check_monotonic(c: &mut Checker, id: usize) -> bool {
    let node = &c.dataset.hierarchy().nodes[id];
    let Some(array) = c.dataset.array(id) else { return false };
    let m = array.metadata();
    let region = match array.read_region(&[0], &m.shape) {
        Ok(bytes) => bytes,
        Err(e) => {
            let path = node.path.clone();
            c.add(
                Severity::Error,
                &path,
                "zarr-v3-valid",
                "NZ §Normative Summary 1",
                "a readable chunk",
                e.to_string(),
            );
            return false;
        }
    };
    let mut values = Vec::with_capacity(m.shape[0] as usize);
    for i in 0..m.shape[0] as usize {
        let Some(v) = m.data_type.value_f64(&region, i) else {
            return false;
        };
        values.push(v);
    }
    let increasing = values.windows(2).all(|w| w[0] < w[1]);
    let decreasing = values.windows(2).all(|w| w[0] > w[1]);
    if !(increasing || decreasing) {
        // The first step that is flat or goes the other way than the first.
        let rising = values.len() > 1 && values[1] > values[0];
        let at = values
            .windows(2)
            .position(|w| !(if rising { w[1] > w[0] } else { w[1] < w[0] }));
        let mut found = String::from("values are not strictly monotonic");
        if let Some(i) = at {
            let _ = write!(found, " (index {i} to {}: {} then {})", i + 1, values[i], values[i + 1]);
        }
        let path = node.path.clone();
        c.add(
            Severity::Warning,
            &path,
            "dimension-coordinate",
            "NZ §Dimension Coordinate Array",
            "strictly monotonic values (it is named like its only dimension)",
            found,
        );
        return false;
    }
    true
}
