//! `differing`: which entries of two lists hold different objects, read as pointers.
//!
//! The in-place strategies' memos (`ctxtrim._memo`) check on every call that a history is
//! the one they read, and bring the list they hand out up to date: both are a comparison of
//! two lists entry by entry, by identity. Python's `==` compares by value once two entries
//! are different objects, and costs a call per entry; here it is one pass over the two
//! arrays of pointers, compared a chunk at a time with `memcmp`, under both lists'
//! critical sections on a free-threaded build, with no Python code run meanwhile.

#![allow(unsafe_code)]

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::critical_section::with_critical_section2;
use pyo3::types::PyList;

/// The item pointers of `list`, as addresses.
///
/// # Safety
/// The caller holds `list`'s critical section (the GIL on a GIL build) and runs no Python
/// code while the slice lives, so the list's array is neither resized nor freed.
unsafe fn items<'a>(list: &'a Bound<'_, PyList>) -> &'a [usize] {
    let ptr = list.as_ptr();
    let len = usize::try_from(ffi::PyList_GET_SIZE(ptr)).unwrap_or(0);
    if len == 0 {
        return &[];
    }
    // Addresses rather than pointers: a slice of integers compares with `memcmp`.
    std::slice::from_raw_parts(
        (*ptr.cast::<ffi::PyListObject>()).ob_item.cast::<usize>(),
        len,
    )
}

/// Entries compared at once: equal chunks (the common case) go at `memcmp` speed.
const CHUNK: usize = 512;

/// The indices below `min(len(a), len(b))` at which `a` and `b` hold different objects
/// (by identity), ascending; None when there are more than `limit` of them.
#[pyfunction]
pub fn differing(a: &Bound<'_, PyList>, b: &Bound<'_, PyList>, limit: usize) -> Option<Vec<usize>> {
    with_critical_section2(a.as_any(), b.as_any(), || {
        // SAFETY: both critical sections are held and nothing below runs Python code.
        let (xs, ys) = unsafe { (items(a), items(b)) };
        let n = xs.len().min(ys.len());
        let mut out = Vec::new();
        for start in (0..n).step_by(CHUNK) {
            let end = (start + CHUNK).min(n);
            if xs[start..end] == ys[start..end] {
                continue;
            }
            for i in start..end {
                if xs[i] != ys[i] {
                    if out.len() == limit {
                        return None;
                    }
                    out.push(i);
                }
            }
        }
        Some(out)
    })
}
