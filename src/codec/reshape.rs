//! `reshape` (zarr-extensions `codecs/reshape`): an `array -> array` codec
//! that gives the codecs after it another shape of the same elements in the
//! same C order. Decoding moves no byte; only the shape the later codecs
//! see changes, so the chain keeps the encoded shape and no stage.
//!
//! Invariants (the registry's, each an error when broken): the encoded
//! shape holds as many elements as the decoded one; at most one `-1`; the
//! input dimensions named over all entries strictly increase; an entry
//! naming input dimensions `d0..dk` sits where the elements before and
//! after it match those before `d0` and after `dk` in the decoded shape.

use crate::json::Value;
use crate::zarr::metadata::MetadataError;

/// One entry of `shape`.
enum Entry {
    Size(u64),
    Dims(Vec<usize>),
    Rest,
}

fn bad(reason: String) -> MetadataError {
    MetadataError::BadCodec {
        codec: "reshape".into(),
        reason,
    }
}

fn product(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

/// The encoded shape for chunks of `decoded` elements per dimension.
pub fn encoded_shape(config: Option<&Value>, decoded: &[u64]) -> Result<Vec<u64>, MetadataError> {
    let items = config
        .and_then(|c| c.get("shape"))
        .and_then(Value::as_array)
        .ok_or_else(|| bad("`shape` is required: a list of sizes, lists of input dimensions, or -1".into()))?;
    if let Some(k) = super::unknown_member(config, &["shape"]) {
        return Err(bad(format!("unknown configuration member `{k}`")));
    }
    let entries = items
        .iter()
        .map(|v| match v {
            Value::Int(-1) => Ok(Entry::Rest),
            Value::Array(dims) => dims
                .iter()
                .map(|d| {
                    d.as_u64()
                        .and_then(|d| usize::try_from(d).ok())
                        .filter(|&d| d < decoded.len())
                })
                .collect::<Option<Vec<usize>>>()
                .map(Entry::Dims)
                .ok_or_else(|| bad(format!("{v} names a dimension the chunk does not have"))),
            v => v
                .as_u64()
                .filter(|&n| n > 0)
                .map(Entry::Size)
                .ok_or_else(|| bad(format!("{v} is not a positive size, a list of dimensions, or -1"))),
        })
        .collect::<Result<Vec<Entry>, MetadataError>>()?;
    if entries.iter().filter(|e| matches!(e, Entry::Rest)).count() > 1 {
        return Err(bad("-1 appears more than once".into()));
    }
    let named: Vec<usize> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dims(d) => Some(d.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    if named.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad(format!(
            "the input dimensions {named:?} do not strictly increase (reshape never transposes)"
        )));
    }
    let total = product(decoded).ok_or_else(|| bad("the chunk has too many elements".into()))?;
    let mut shape: Vec<Option<u64>> = entries
        .iter()
        .map(|e| match e {
            Entry::Size(n) => Some(*n),
            Entry::Dims(d) => d.iter().try_fold(1u64, |a, &i| a.checked_mul(decoded[i])),
            Entry::Rest => None,
        })
        .collect();
    let known = shape
        .iter()
        .flatten()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("the encoded shape has too many elements".into()))?;
    if let Some(rest) = shape.iter_mut().find(|s| s.is_none()) {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(bad(format!("-1 cannot make {total} elements from {known}")));
        }
        *rest = Some(total / known);
    }
    let shape: Vec<u64> = shape.into_iter().map(|s| s.unwrap_or(1)).collect();
    if product(&shape) != Some(total) {
        return Err(bad(format!(
            "the encoded shape {shape:?} does not hold the chunk's {total} elements ({decoded:?})"
        )));
    }
    for (i, e) in entries.iter().enumerate() {
        if let Entry::Dims(d) = e
            && let (Some(&first), Some(&last)) = (d.first(), d.last())
            && (product(&shape[..i]) != product(&decoded[..first])
                || product(&shape[i + 1..]) != product(&decoded[last + 1..]))
        {
            return Err(bad(format!(
                "entry {i} names dimensions {d:?}, but the elements before or after it differ from theirs"
            )));
        }
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn shape(cfg: &str, decoded: &[u64]) -> Result<Vec<u64>, MetadataError> {
        encoded_shape(Some(&parse(cfg.as_bytes()).unwrap()), decoded)
    }

    /// The registry's rules, with its own examples.
    #[test]
    fn shapes_follow_the_registry() {
        // The README's example: chunk [100, 50, 64, 3] as [[0, 1], [2], 3].
        assert_eq!(
            shape(r#"{"shape": [[0, 1], [2], 3]}"#, &[100, 50, 64, 3]).unwrap(),
            [5000, 64, 3]
        );
        assert_eq!(shape(r#"{"shape": [-1, 4]}"#, &[6, 2]).unwrap(), [3, 4]);
        assert_eq!(
            shape(r#"{"shape": [[0, 1], 10, [3, 4]]}"#, &[2, 3, 10, 4, 5]).unwrap(),
            [6, 10, 20]
        );
        assert_eq!(shape(r#"{"shape": [12]}"#, &[3, 4]).unwrap(), [12]);
        for (cfg, decoded) in [
            (r#"{"shape": [[1], [0]]}"#, &[2u64, 3][..]),
            (r#"{"shape": [[1, 0], 10, [3, 4]]}"#, &[2, 3, 10, 4, 5]),
            (r#"{"shape": [[3, 4], 10, [0, 1]]}"#, &[2, 3, 10, 4, 5]),
            (r#"{"shape": [-1, -1]}"#, &[4]),
            (r#"{"shape": [5]}"#, &[2, 3]),
            (r#"{"shape": [-1, 4]}"#, &[5]),
            (r#"{"shape": [0, 6]}"#, &[6]),
            (r#"{"shape": [[2]]}"#, &[6]),
            // [1] holds 3 elements, but 2 come before it in the input.
            (r#"{"shape": [[1], 2]}"#, &[2, 3]),
            (r#"{"shape": [6], "order": "C"}"#, &[2, 3]),
            ("{}", &[2, 3]),
        ] {
            assert!(shape(cfg, decoded).is_err(), "{cfg} over {decoded:?}");
        }
    }
}
