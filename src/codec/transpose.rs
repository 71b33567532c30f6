//! `transpose` (spec: zarr-v3/codecs/transpose.rst): an array -> array codec
//! that permutes dimensions. Example:
//! `{"name": "transpose", "configuration": {"order": [2, 0, 1]}}`; the
//! draft's `"C"` (identity) and `"F"` (reversed) are accepted too.
//!
//! Encoded `B` has `B_shape[i] = A_shape[order[i]]` and
//! `B[B_pos] = A[A_pos]` with `B_pos[i] = A_pos[order[i]]`; decoding rebuilds
//! `A` in C order, and encoding lays `A` out as `B`.

use crate::json::Value;
use crate::zarr::metadata::MetadataError;

/// `transpose`: the array's axes stored in another order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transpose {
    /// Stored axis `i` is decoded axis `order[i]`.
    pub order: Vec<usize>,
}

impl Transpose {
    /// Read its configuration for an array of `ndim` dimensions.
    pub fn from_configuration(config: Option<&Value>, ndim: usize) -> Result<Self, MetadataError> {
        let bad = |reason: String| MetadataError::BadCodec {
            codec: "transpose".into(),
            reason,
        };
        let order: Vec<usize> = match config.and_then(|c| c.get("order")) {
            Some(Value::Str(s)) if s == "C" => (0..ndim).collect(),
            Some(Value::Str(s)) if s == "F" => (0..ndim).rev().collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_u64().and_then(|u| usize::try_from(u).ok()))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("`order` holds a non-integer".into()))?,
            Some(other) => return Err(bad(format!("invalid order {other}"))),
            None => return Err(bad("`order` is required".into())),
        };
        let mut seen = vec![false; ndim];
        let is_permutation = order.len() == ndim
            && order
                .iter()
                .all(|&o| o < ndim && !std::mem::replace(&mut seen[o], true));
        if !is_permutation {
            return Err(bad(format!("order {order:?} is not a permutation of 0..{ndim}")));
        }
        Ok(Transpose { order })
    }

    /// The encoded shape for a decoded shape.
    pub fn encoded_shape(&self, decoded: &[u64]) -> Vec<u64> {
        self.order.iter().map(|&o| decoded[o]).collect()
    }

    /// For each element of `A` (shape `decoded_shape`) in C order, its
    /// index in `B` in C order: how values of any length are reordered.
    pub fn source_indices(&self, decoded_shape: &[u64]) -> Vec<usize> {
        let total: usize = decoded_shape.iter().map(|&d| d as usize).product();
        let b: Vec<u8> = (0..total as u64).flat_map(u64::to_ne_bytes).collect();
        self.decode(&b, decoded_shape, 8)
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()) as usize)
            .collect()
    }

    /// Lay out `A` (shape `decoded_shape`, C order, elements of `item`
    /// bytes) as encoded `B`: the inverse of [`Transpose::decode`].
    pub fn encode(&self, decoded: &[u8], decoded_shape: &[u64], item: usize) -> Vec<u8> {
        let places = self.source_indices(decoded_shape);
        let mut out = vec![0; decoded.len()];
        for (from, &to) in decoded.chunks_exact(item).zip(&places) {
            out[to * item..(to + 1) * item].copy_from_slice(from);
        }
        out
    }

    /// Rebuild `A` (shape `decoded_shape`, C order) from encoded `B`.
    pub fn decode(&self, encoded: &[u8], decoded_shape: &[u64], item: usize) -> Vec<u8> {
        let ndim = decoded_shape.len();
        if ndim < 2 || self.order.iter().enumerate().all(|(i, &o)| i == o) {
            return encoded.to_vec();
        }
        let b_shape = self.encoded_shape(decoded_shape);
        // C-order strides of B, in elements.
        let mut b_strides = vec![1usize; ndim];
        for i in (0..ndim - 1).rev() {
            b_strides[i] = b_strides[i + 1] * b_shape[i + 1] as usize;
        }
        // The B stride of each A dimension j is b_strides[i] where order[i] == j.
        let mut a_strides_in_b = vec![0usize; ndim];
        for (i, &o) in self.order.iter().enumerate() {
            a_strides_in_b[o] = b_strides[i];
        }
        let total: usize = decoded_shape.iter().map(|&d| d as usize).product();
        let mut out = Vec::with_capacity(total * item);
        if total == 0 {
            return out;
        }
        let inner = decoded_shape[ndim - 1] as usize;
        let inner_stride = a_strides_in_b[ndim - 1] * item;
        let mut pos = vec![0usize; ndim - 1];
        let outer: Vec<usize> = decoded_shape[..ndim - 1].iter().map(|&n| n as usize).collect();
        loop {
            let base: usize = pos.iter().zip(&a_strides_in_b).map(|(p, s)| p * s).sum::<usize>() * item;
            for k in 0..inner {
                let at = base + k * inner_stride;
                out.extend_from_slice(&encoded[at..at + item]);
            }
            // The next index over the outer dimensions of A.
            if !crate::odometer::next(&mut pos, &outer) {
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn t(order: &str, ndim: usize) -> Result<Transpose, MetadataError> {
        Transpose::from_configuration(
            Some(&parse(format!(r#"{{"order": {order}}}"#).as_bytes()).unwrap()),
            ndim,
        )
    }

    #[test]
    fn decodes_against_a_plain_model() {
        // A has shape (2, 3, 4), A[i][j][k] = 100i + 10j + k; order [2, 0, 1].
        let shape = [2u64, 3, 4];
        let tr = t("[2, 0, 1]", 3).unwrap();
        assert_eq!(tr.encoded_shape(&shape), [4, 2, 3]);
        let mut b = vec![0u8; 24];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    // B_pos = (k, i, j) in B shape (4, 2, 3).
                    b[k * 6 + i * 3 + j] = (100 * i + 10 * j + k) as u8;
                }
            }
        }
        let a = tr.decode(&b, &shape, 1);
        let want: Vec<u8> = (0..2)
            .flat_map(|i| (0..3).flat_map(move |j| (0..4).map(move |k| (100 * i + 10 * j + k) as u8)))
            .collect();
        assert_eq!(a, want);
    }

    #[test]
    fn order_forms() {
        assert_eq!(t(r#""F""#, 3).unwrap().order, [2, 1, 0]);
        assert_eq!(t(r#""C""#, 2).unwrap().order, [0, 1]);
        assert!(t("[0, 0]", 2).is_err());
        assert!(t("[0, 2]", 2).is_err());
        assert!(t("[0]", 2).is_err());
    }

    proptest::proptest! {
        /// `decode` undoes `encode`, for any order of up to 4 axes and any
        /// element size.
        #[test]
        fn decode_undoes_encode(shape in proptest::collection::vec(1u64..5, 1..=4), seed in proptest::prelude::any::<u64>(), item in 1usize..=8) {
            let ndim = shape.len();
            // A permutation of 0..ndim from the seed.
            let mut order: Vec<usize> = (0..ndim).collect();
            let mut s = seed;
            for i in (1..ndim).rev() {
                order.swap(i, (s % (i as u64 + 1)) as usize);
                s /= i as u64 + 1;
            }
            let t = Transpose { order };
            let total: u64 = shape.iter().product();
            let a: Vec<u8> = (0..total as usize * item).map(|i| (i % 251) as u8).collect();
            let b = t.encode(&a, &shape, item);
            proptest::prop_assert_eq!(t.decode(&b, &shape, item), a);
        }
    }
}
