//! The one odometer: the next multi-index of a box, in C order (the last
//! axis fastest), for every walk over chunks, rows and references.
//!
//! Invariant: an index moves only inside its box; past the box's last
//! index it wraps to the first and says so (`false`), so a loop ends
//! there and never reads outside.

/// Move `pos` to the next index of the box `start[a] <= pos[a] < end[a]`;
/// `false` when `pos` was the last (it is then the first again). An empty
/// `pos` has one index.
pub fn next_from<T>(pos: &mut [T], start: &[T], end: &[T]) -> bool
where
    T: Copy + PartialOrd + std::ops::AddAssign + From<u8>,
{
    step(pos, end, |a| start[a])
}

/// Move `pos` to the next index of an array of `shape` (from 0); `false`
/// when `pos` was the last (it is then all 0 again).
pub fn next<T>(pos: &mut [T], shape: &[T]) -> bool
where
    T: Copy + PartialOrd + std::ops::AddAssign + From<u8>,
{
    step(pos, shape, |_| T::from(0))
}

/// The walk of both: axis `a` wraps to `first(a)`.
fn step<T>(pos: &mut [T], end: &[T], first: impl Fn(usize) -> T) -> bool
where
    T: Copy + PartialOrd + std::ops::AddAssign + From<u8>,
{
    for a in (0..pos.len()).rev() {
        pos[a] += T::from(1);
        if pos[a] < end[a] {
            return true;
        }
        pos[a] = first(a);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// It visits every index of the box once, in C order, and ends
        /// where it began.
        #[test]
        fn every_index_once_in_c_order(
            dims in proptest::collection::vec((0u64..4, 1u64..4), 0..4),
        ) {
            let start: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let end: Vec<u64> = dims.iter().map(|d| d.0 + d.1).collect();
            let mut pos = start.clone();
            let mut seen = vec![pos.clone()];
            while next_from(&mut pos, &start, &end) {
                prop_assert!(seen.last().unwrap() < &pos, "C order");
                seen.push(pos.clone());
            }
            prop_assert_eq!(&pos, &start);
            prop_assert_eq!(seen.len() as u64, dims.iter().map(|d| d.1).product::<u64>());
            // From 0, in an array of the box's shape, the same walk.
            let shape: Vec<usize> = dims.iter().map(|d| d.1 as usize).collect();
            let mut at = vec![0usize; shape.len()];
            let mut n = 1;
            while next(&mut at, &shape) {
                n += 1;
            }
            prop_assert_eq!(n, seen.len());
        }
    }
}
