//! `untrack`: takes an object no reference cycle can run through out of the cyclic GC.
//!
//! CPython's full collections walk every tracked object, so a server holding millions of
//! messages would pay for each of them on every full pass (measured: at 10,000 sessions
//! the collector took more time than the turns). A message is a `gc=False` struct, and what
//! it holds that Python would track is untracked here when it is made: its frozen JSON
//! copies (`FrozenDict`/`FrozenList` of plain JSON, which never change) and its facts
//! object. CPython has no Python-level call for this, hence an FFI call (the crate's other
//! `unsafe` is the slot access in `slots` and the struct building in `fresh`).

#![allow(unsafe_code)]

use pyo3::ffi;
use pyo3::prelude::*;

/// Stops the cyclic GC tracking `obj` (a no-op for an object of a type without GC support).
/// Only for objects no cycle can run through: a cycle of untracked objects is never freed.
pub fn untrack(obj: &Bound<'_, PyAny>) {
    let ptr = obj.as_ptr();
    // SAFETY: `obj` is a live object the caller holds; `PyObject_GC_UnTrack` reads the GC
    // header, which only GC types have, so it is called for those only. Untracking is
    // idempotent, and the object's dealloc untracks again harmlessly.
    unsafe {
        if ffi::PyType_IS_GC(ffi::Py_TYPE(ptr)) != 0 {
            ffi::PyObject_GC_UnTrack(ptr.cast());
        }
    }
}
