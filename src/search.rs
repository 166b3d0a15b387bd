//! Searches for the first position where a monotone predicate turns true: a plain
//! bisection, and one that gallops from a hint first.
//!
//! Invariants: for a `pred` that is false then true over `0..len`, both return the first
//! index where it is true (`len` if it never is), whatever the hint
//! (`partition_point_bounds`).

/// [`partition_point`] that starts at `hint` and gallops away from it (1, 2, 4, … steps)
/// before bisecting: O(log d) probes, where d is how far the answer is from `hint`. The log's
/// queries land near the newest messages (a budget keeps the end of the history), so with a
/// good hint they cost the same at 100k messages as at 1k — and probes of a column near one
/// place stay in the same few cached chunks, where a plain bisection touches a new chunk
/// with every probe.
pub(crate) fn partition_point_near(
    len: usize,
    hint: usize,
    mut pred: impl FnMut(usize) -> bool,
) -> usize {
    let hint = hint.min(len);
    // Invariant: `pred` is false below `lo` and true from `hi` on.
    let (lo, hi) = if hint < len && !pred(hint) {
        let (mut lo, mut step) = (hint + 1, 1usize);
        loop {
            let probe = hint.saturating_add(step);
            if probe >= len {
                break (lo, len);
            }
            if pred(probe) {
                break (lo, probe);
            }
            lo = probe + 1;
            step = step.saturating_mul(2);
        }
    } else {
        let (mut hi, mut step) = (hint, 1usize);
        loop {
            let Some(probe) = hint.checked_sub(step) else {
                break (0, hi);
            };
            if !pred(probe) {
                break (probe + 1, hi);
            }
            hi = probe;
            step = step.saturating_mul(2);
        }
    };
    lo + partition_point(hi - lo, |i| pred(lo + i))
}

/// The largest `i` in `0..len` with `pred(i)` false, plus one: the first index where `pred`
/// turns true, for a `pred` that is false then true. `len` if it never does.
pub(crate) fn partition_point(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_point_bounds() {
        assert_eq!(partition_point(0, |_| true), 0);
        assert_eq!(partition_point(10, |i| i >= 4), 4);
        assert_eq!(partition_point(10, |_| false), 10);
        for len in 0..40 {
            for answer in 0..=len {
                for hint in 0..=len + 2 {
                    assert_eq!(partition_point_near(len, hint, |i| i >= answer), answer);
                }
            }
        }
    }
}
