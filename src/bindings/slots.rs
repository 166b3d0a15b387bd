//! `CacheSlot`: reads (and writes) one of a `Message`'s cache slots
//! (`ctxtrim.messages.CACHE_SLOTS`: its facts, its kept renderings) straight from the object,
//! as CPython's own slot descriptor does.
//!
//! Every window decision reads the facts slot of each message it looks at, and every request
//! the rendering slot of each message it sends. Through `getattr` a read costs a type lookup
//! and a descriptor call, and an unset slot raises and discards an `AttributeError` (~150 ns:
//! each new message's first read of each slot, so several per message on a server turn). The
//! slot's offset is fixed by its class; reading the pointer there is one load, and an unset
//! slot is a null pointer. Writing it is one store (and the release of what it held), where
//! msgspec's `force_setattr` costs a Python call per new message's facts. The offset is taken
//! from the slot's member descriptor once per interpreter, after checking that the descriptor
//! is CPython's `member_descriptor` for an aligned object slot of the cache class `Message`
//! derives from.
//!
//! Invariants: only an object whose type is exactly `Message` is read or written directly
//! (its layout is the cache class's plus Message's fields); anything else goes through
//! `getattr`/`force_setattr`, as does every access on a free-threaded build (where CPython
//! reads slots atomically). An unset slot reads as `None`. (`unsafe` code is allowed only
//! where `allow(unsafe_code)` says so: `grep -rn 'allow(unsafe_code)' src` lists them.)

#![allow(unsafe_code)]

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};
use pyo3::{ffi, intern};

use super::convert::classes;

/// The cache slots, by name, with their offsets in a `Message`.
struct Slots {
    names: Vec<(Py<PyString>, isize)>,
    /// The offsets of the slots a store's trimming releases
    /// (`ctxtrim.messages.RELEASABLE_SLOTS`).
    releasable: Vec<isize>,
}

static SLOTS: PyOnceLock<Slots> = PyOnceLock::new();

fn slots(py: Python<'_>) -> PyResult<&Slots> {
    SLOTS.get_or_try_init(py, || {
        let messages = py.import("ctxtrim.messages")?;
        let caches = messages.getattr("_Caches")?.cast_into::<PyType>()?;
        let message = messages.getattr("Message")?.cast_into::<PyType>()?;
        let mut names = Vec::new();
        let mut releasable = Vec::new();
        if message.is_subclass(&caches)? && !free_threaded(py)? {
            let own = caches.getattr("__dict__")?;
            let release = messages.getattr("RELEASABLE_SLOTS")?;
            for name in messages.getattr("CACHE_SLOTS")?.try_iter()? {
                let name = name?.cast_into::<PyString>()?;
                if let Some(offset) = object_slot_offset(&own.get_item(&name)?)? {
                    if release.contains(&name)? {
                        releasable.push(offset);
                    }
                    names.push((name.unbind(), offset));
                }
            }
        }
        Ok(Slots { names, releasable })
    })
}

/// Whether this CPython is free-threaded: it reads and writes slots atomically, so slots are
/// left to Python there (`getattr`, the classes' constructors).
pub(super) fn free_threaded(py: Python<'_>) -> PyResult<bool> {
    py.import("sysconfig")?
        .call_method1("get_config_var", ("Py_GIL_DISABLED",))?
        .is_truthy()
}

/// The offset of the slot `descr` stands for, if it is CPython's `member_descriptor` for an
/// aligned object slot (`Py_T_OBJECT_EX`: a `PyObject*`, NULL when unset).
pub(super) fn object_slot_offset(descr: &Bound<'_, PyAny>) -> PyResult<Option<isize>> {
    let member_type = descr
        .py()
        .import("types")?
        .getattr("MemberDescriptorType")?;
    if !descr.get_type().is(&member_type) {
        return Ok(None);
    }
    // SAFETY: `descr` is exactly a `member_descriptor`, whose C struct is a
    // `PyMemberDescrObject` pointing at its `PyMemberDef`, alive as long as the class (held
    // by its module for the interpreter's life).
    let member = unsafe {
        let d = descr.as_ptr().cast::<ffi::PyMemberDescrObject>();
        (*d).d_member.cast::<ffi::PyMemberDef>().read()
    };
    let aligned = member.offset % std::mem::align_of::<*mut ffi::PyObject>() as isize == 0;
    Ok((member.type_code == ffi::Py_T_OBJECT_EX && aligned).then_some(member.offset))
}

/// The `PyObject*` field at `offset` in `obj`.
///
/// # Safety
/// `offset` must be an aligned object slot of `obj`'s layout (from `object_slot_offset` on
/// a class `obj`'s type derives from, inside its instance size).
pub(super) unsafe fn field_at(obj: *mut ffi::PyObject, offset: isize) -> *mut *mut ffi::PyObject {
    #[allow(clippy::cast_ptr_alignment)] // aligned: checked by `object_slot_offset`
    // SAFETY: the caller guarantees `offset` lies inside `obj`'s instance.
    unsafe {
        obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>()
    }
}

/// Stores `value` (a new reference) in the `PyObject*` field at `offset` in `obj`, releasing
/// the one it held after the write, as CPython's member descriptor does.
///
/// # Safety
/// As for [`field_at`]; the caller holds the GIL (a GIL build), so no other thread touches
/// the field.
pub(super) unsafe fn replace_field(
    obj: &Bound<'_, PyAny>,
    offset: isize,
    value: &Bound<'_, PyAny>,
) {
    // SAFETY: the caller's guarantees (see above).
    unsafe {
        let field = field_at(obj.as_ptr(), offset);
        let old = field.read();
        field.write(value.clone().into_ptr());
        if !old.is_null() {
            ffi::Py_DECREF(old);
        }
    }
}

/// Empties the caches of `obj` that can be made again (`ctxtrim.messages.RELEASABLE_SLOTS`:
/// its facts and renderings), if it is exactly a `Message`; its provider counts stay.
/// Nothing on a free-threaded build (where slots are left to Python): they are kept there.
pub(super) fn release_caches(obj: &Bound<'_, PyAny>) {
    let py = obj.py();
    let (Ok(slots), Ok(c)) = (slots(py), classes(py)) else {
        return;
    };
    if !obj.get_type().is(c.message.bind(py)) {
        return;
    }
    for &offset in &slots.releasable {
        // SAFETY: as in `CacheSlot::set`: the field at `offset` of an exact `Message` is its
        // `PyObject*` slot (or NULL); with the GIL held no other thread touches it. The
        // reference it held is released after the slot is emptied.
        unsafe {
            let field = field_at(obj.as_ptr(), offset);
            let old = field.read();
            if !old.is_null() {
                field.write(std::ptr::null_mut());
                ffi::Py_DECREF(old);
            }
        }
    }
}

/// The name of the facts slot (`ctxtrim.messages.CACHE_SLOTS`).
pub const FACTS: &str = "_ctxtrim_facts";

/// One cache slot of `Message`, ready to read.
pub struct CacheSlot<'py> {
    name: Bound<'py, PyString>,
    /// `Message`, the one class whose instances are read at `offset`.
    message: *mut ffi::PyTypeObject,
    /// The offset of the slot in a `Message`, or None to read it with `getattr`.
    offset: Option<isize>,
}

impl<'py> CacheSlot<'py> {
    /// The slot called `name` (one of `CACHE_SLOTS`; another name is read with `getattr`).
    pub fn named(name: &Bound<'py, PyString>) -> PyResult<Self> {
        let py = name.py();
        let names = &slots(py)?.names;
        // By identity first (the names are interned, and so are the callers' on hot paths):
        // an equality test is a Python comparison per name.
        let mut offset = names.iter().find(|(n, _)| n.is(name)).map(|&(_, at)| at);
        if offset.is_none() {
            for (n, at) in names {
                if n.bind(py).as_any().eq(name)? {
                    offset = Some(*at);
                    break;
                }
            }
        }
        Ok(Self {
            name: name.clone(),
            message: classes(py)?.message.as_ptr().cast(),
            offset,
        })
    }

    /// The facts slot.
    pub fn facts(py: Python<'py>) -> PyResult<Self> {
        Self::named(intern!(py, FACTS))
    }

    /// Whether `obj` is exactly a `Message` (whose slots are read at their offsets).
    pub fn is_message(&self, obj: &Bound<'py, PyAny>) -> bool {
        obj.get_type_ptr() == self.message
    }

    /// What `obj` keeps in this slot, or None if it keeps nothing there.
    pub fn get(&self, obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = obj.py();
        match self.offset {
            Some(offset) if self.is_message(obj) => {
                // SAFETY: `obj` is exactly a `Message`, a subclass of the class that declared
                // this object slot at `offset` (checked when the offset was read), so the
                // field there is a `PyObject*` or NULL; with the GIL held no other thread
                // writes it during the read, and `from_borrowed_ptr` takes a new reference.
                unsafe {
                    let value = field_at(obj.as_ptr(), offset).read();
                    Ok((!value.is_null()).then(|| Bound::from_borrowed_ptr(py, value)))
                }
            }
            _ => obj.getattr_opt(&self.name),
        }
    }

    /// Keeps `value` in this slot of `obj` (a frozen struct: as msgspec's `force_setattr`
    /// sets it, and through it for anything but an exact `Message` with a known offset).
    pub fn set(&self, obj: &Bound<'py, PyAny>, value: &Bound<'py, PyAny>) -> PyResult<()> {
        let py = obj.py();
        match self.offset {
            Some(offset) if self.is_message(obj) => {
                // SAFETY: as in `get`, the field at `offset` of an exact `Message` is its
                // `PyObject*` slot (or NULL); with the GIL held no other thread touches it.
                unsafe { replace_field(obj, offset, value) };
                Ok(())
            }
            _ => {
                classes(py)?
                    .force_setattr
                    .bind(py)
                    .call1((obj, &self.name, value))?;
                Ok(())
            }
        }
    }
}
