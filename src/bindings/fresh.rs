//! `fresh`: a message struct whose fields the core has checked, built by writing its fields.
//!
//! Building a `Message` or a block through its class costs a call into msgspec's constructor
//! and one into the struct's `__post_init__` (the core's checks): together about half of a
//! message's construction time, paid for every message a
//! constructor or a reader makes. When the core has itself checked every field, the struct is
//! made as msgspec makes it: allocated by its type (`tp_alloc`: zeroed, the type referenced)
//! and each field stored at its slot, a new reference each. That is all msgspec's
//! constructor does for these classes: `gc=False` (never tracked), no defaults computed at
//! construction beyond the `None`s the caller passes, no weak references, no `__dict__`.
//!
//! Invariants: a class is built this way only if, when this module first loads, it is not a
//! GC type, every field named in its `__struct_fields__` is CPython's `member_descriptor` for
//! an aligned object slot inside the instance, and the build is given exactly one value per
//! field in that order; otherwise (or on a free-threaded build) `layout` is `None` and the
//! caller goes through the class.

#![allow(unsafe_code)]

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3::{ffi, intern};

use super::convert::classes;
use super::slots::{field_at, free_threaded, object_slot_offset, replace_field};

/// Where a struct class keeps its fields: the offset of each, in `__struct_fields__` order.
pub struct Layout {
    ty: Py<PyType>,
    offsets: Vec<isize>,
}

/// The layouts of the classes the core builds and reads, or `None` for a class it must call
/// (and read through `getattr`).
pub struct Layouts {
    pub message: Option<Layout>,
    pub text: Option<Layout>,
    pub tool_use: Option<Layout>,
    pub tool_result: Option<Layout>,
    pub reasoning: Option<Layout>,
}

static LAYOUTS: PyOnceLock<Layouts> = PyOnceLock::new();

pub fn layouts(py: Python<'_>) -> PyResult<&Layouts> {
    LAYOUTS.get_or_try_init(py, || {
        let c = classes(py)?;
        let free_threaded = free_threaded(py)?;
        let of = |ty: &Py<PyType>| -> PyResult<Option<Layout>> {
            if free_threaded {
                return Ok(None);
            }
            layout_of(ty.bind(py))
        };
        Ok(Layouts {
            message: of(&c.message)?,
            text: of(&c.text)?,
            tool_use: of(&c.tool_use)?,
            tool_result: of(&c.tool_result)?,
            reasoning: of(&c.reasoning)?,
        })
    })
}

/// The layout of `ty`, if every field is an object slot this module can write.
fn layout_of(ty: &Bound<'_, PyType>) -> PyResult<Option<Layout>> {
    let py = ty.py();
    // SAFETY: `ty` is a live type object; its flags and basic size are plain fields.
    let (flags, size) = unsafe {
        let t = ty.as_type_ptr();
        (ffi::PyType_GetFlags(t), (*t).tp_basicsize)
    };
    if flags & ffi::Py_TPFLAGS_HAVE_GC != 0 {
        return Ok(None);
    }
    let width = std::mem::size_of::<*mut ffi::PyObject>() as isize;
    let header = std::mem::size_of::<ffi::PyObject>() as isize;
    let mut offsets = Vec::new();
    for name in ty.getattr(intern!(py, "__struct_fields__"))?.try_iter()? {
        let name = name?;
        let mut offset = None;
        for base in ty.getattr(intern!(py, "__mro__"))?.try_iter()? {
            if let Ok(descr) = base?.getattr("__dict__")?.get_item(&name) {
                offset = object_slot_offset(&descr)?;
                break;
            }
        }
        match offset {
            Some(at) if at >= header && at + width <= size => offsets.push(at),
            _ => return Ok(None),
        }
    }
    Ok(Some(Layout {
        ty: ty.clone().unbind(),
        offsets,
    }))
}

impl Layout {
    /// The offset of field `i` in `obj`, if `obj` is exactly this layout's class (a subclass
    /// may add fields).
    fn offset_in(&self, obj: &Bound<'_, PyAny>, i: usize) -> Option<isize> {
        let offset = *self.offsets.get(i)?;
        (obj.get_type_ptr() == self.ty.as_ptr().cast()).then_some(offset)
    }

    /// Field `i` of `obj` (a new reference) if `obj` is exactly this layout's class, read at
    /// its offset: one load, where `getattr` costs a type lookup and a descriptor call. None
    /// for another class or an empty slot.
    pub fn get<'py>(&self, obj: &Bound<'py, PyAny>, i: usize) -> Option<Bound<'py, PyAny>> {
        let py = obj.py();
        let offset = self.offset_in(obj, i)?;
        // SAFETY: `obj` is exactly this class, whose field `i` is the aligned object slot at
        // `offset` inside its instance (checked by `layout_of`); with the GIL held (this
        // layout exists only on a GIL build) no other thread writes it. The value is taken
        // as a new reference.
        unsafe {
            let value = field_at(obj.as_ptr(), offset).read();
            (!value.is_null()).then(|| Bound::from_borrowed_ptr(py, value))
        }
    }

    /// Stores `value` (a new reference) in field `i` of `obj`, releasing the one it held, if
    /// `obj` is exactly this layout's class: what msgspec's `force_setattr` does to a frozen
    /// struct, without the call. False (nothing done) for another class.
    pub fn set(&self, obj: &Bound<'_, PyAny>, i: usize, value: &Bound<'_, PyAny>) -> bool {
        let Some(offset) = self.offset_in(obj, i) else {
            return false;
        };
        // SAFETY: as in `get`: field `i` of an exact instance is the object slot at `offset`,
        // and with the GIL held no other thread touches it.
        unsafe { replace_field(obj, offset, value) };
        true
    }

    /// A new instance with `values` as its fields (one per field, in order): what calling
    /// the class makes, without its `__post_init__`. The caller has checked every value.
    pub fn build<'py>(
        &self,
        py: Python<'py>,
        values: &[&Bound<'py, PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        if values.len() != self.offsets.len() {
            // The classes' fields are checked against the core's lists when it loads
            // (`convert::classes`), so this is a bug in the core: an error, never a panic.
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "ctxtrim core: {} values for the {} fields of a struct",
                values.len(),
                self.offsets.len()
            )));
        }
        let ty = self.ty.bind(py);
        // SAFETY: `tp_alloc` of a non-GC type returns a zeroed instance of `tp_basicsize`
        // bytes with its type referenced (or NULL with an exception set); every offset was
        // checked to be an aligned object slot inside that size, and each store takes a new
        // reference to its value, as msgspec's constructor does; the slots start NULL, so
        // nothing is released.
        unsafe {
            let t = ty.as_type_ptr();
            let alloc = (*t).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
            let obj = alloc(t, 0);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            for (value, offset) in values.iter().zip(&self.offsets) {
                field_at(obj, *offset).write((*value).clone().into_ptr());
            }
            Ok(Bound::from_owned_ptr(py, obj))
        }
    }
}
