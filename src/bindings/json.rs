//! Tool-arguments JSON exactly as Python's `json` module reads and writes it, at msgspec's
//! speed: `json_loads` is `json.loads` and `compact_json` is `json.dumps(value,
//! ensure_ascii=False, separators=(",", ":"))`, result for result and error for error.
//!
//! The converters parse a tool call's `arguments` text and write it back in this compact form
//! on every message that carries one; Python's `json` module makes that the largest cost of
//! reading or rendering such a message. msgspec gives the same answers wherever both accept
//! the input, and refuses more (`NaN`, lone surrogates, numbers that overflow a float), so:
//!
//! - reading tries msgspec's decoder and hands whatever it refuses to `json.loads`, which then
//!   decides (a value, or its own error);
//! - writing uses msgspec's encoder only for values of exact plain-JSON types without a float
//!   or a long integer (`repr` writes `1e+16` where msgspec writes `1e16`; `json` refuses to
//!   print an integer of thousands of digits), [`same_json`], and `json.dumps` for anything
//!   else.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use super::convert::{classes, Classes};

/// Deeper than a tool's arguments go; a deeper value is left to `json`, which says why.
const MAX_DEPTH: u32 = 64;

struct Codecs {
    decode: Py<PyAny>,
    encode: Py<PyAny>,
    py_loads: Py<PyAny>,
    py_dumps: Py<PyAny>,
}

static CODECS: PyOnceLock<Codecs> = PyOnceLock::new();

fn codecs(py: Python<'_>) -> PyResult<&Codecs> {
    CODECS.get_or_try_init(py, || {
        let msgspec = py.import("msgspec.json")?;
        let json = py.import("json")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("ensure_ascii", false)?;
        kwargs.set_item("separators", (",", ":"))?;
        let encoder = json.getattr("JSONEncoder")?.call((), Some(&kwargs))?;
        Ok(Codecs {
            decode: msgspec
                .getattr("Decoder")?
                .call0()?
                .getattr("decode")?
                .unbind(),
            encode: msgspec.getattr("encode")?.unbind(),
            py_loads: json.getattr("loads")?.unbind(),
            py_dumps: encoder.getattr("encode")?.unbind(),
        })
    })
}

/// `json.loads(text)`.
#[pyfunction]
pub fn json_loads<'py>(text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    let c = codecs(py)?;
    match c.decode.bind(py).call1((text,)) {
        Ok(value) => Ok(value),
        Err(_) => c.py_loads.bind(py).call1((text,)),
    }
}

/// `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`.
#[pyfunction]
pub fn compact_json<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    let py = value.py();
    let c = codecs(py)?;
    if same_json(classes(py)?, value, 0) {
        let encoded = c.encode.bind(py).call1((value,))?.cast_into::<PyBytes>()?;
        // msgspec writes UTF-8 (the strings were checked to be valid).
        if let Ok(text) = std::str::from_utf8(encoded.as_bytes()) {
            return Ok(PyString::new(py, text));
        }
    }
    Ok(c.py_dumps
        .bind(py)
        .call1((value,))?
        .cast_into::<PyString>()?)
}

/// msgspec's JSON of `value` when it is plain JSON that `json.dumps` writes the same
/// (`same_json`), else `None`: what a kept rendering holding `value` encodes it as.
pub fn plain_json_bytes<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let py = value.py();
    if !same_json(classes(py)?, value, 0) {
        return Ok(None);
    }
    let encoded = codecs(py)?.encode.bind(py).call1((value,))?;
    Ok(Some(encoded.cast_into::<PyBytes>()?))
}

/// Whether `text` is exactly `compact_json(value)`: compared as bytes, with no string made,
/// when msgspec writes it.
pub fn is_compact_json_of(value: &Bound<'_, PyAny>, text: &Bound<'_, PyString>) -> PyResult<bool> {
    let py = value.py();
    let c = codecs(py)?;
    if same_json(classes(py)?, value, 0) {
        let encoded = c.encode.bind(py).call1((value,))?.cast_into::<PyBytes>()?;
        return Ok(text
            .to_str()
            .is_ok_and(|t| t.as_bytes() == encoded.as_bytes()));
    }
    c.py_dumps.bind(py).call1((value,))?.eq(text)
}

/// Whether msgspec writes `value` exactly as `json.dumps` does: exact plain-JSON types (a
/// frozen dict or list counts), `str` keys, valid UTF-8, integers that fit 64 bits (`json`
/// refuses to print very long ones), no float. The two escape every character alike
/// (`tests/formats/test_formats.py` checks each one).
pub fn same_json(c: &Classes, value: &Bound<'_, PyAny>, depth: u32) -> bool {
    let py = value.py();
    if let Ok(s) = value.cast_exact::<PyString>() {
        return s.to_str().is_ok();
    }
    if value.is_none() || value.is_exact_instance_of::<PyBool>() {
        return true;
    }
    if let Ok(int) = value.cast_exact::<PyInt>() {
        return int.extract::<i64>().is_ok();
    }
    if depth >= MAX_DEPTH {
        return false;
    }
    let ty = value.get_type();
    if value.is_exact_instance_of::<PyDict>() || ty.is(c.frozen_dict.bind(py)) {
        let Ok(dict) = value.cast::<PyDict>() else {
            return false;
        };
        return dict.iter().all(|(k, v)| {
            k.cast_exact::<PyString>().is_ok_and(|k| k.to_str().is_ok())
                && same_json(c, &v, depth + 1)
        });
    }
    if value.is_exact_instance_of::<PyList>() || ty.is(c.frozen_list.bind(py)) {
        let Ok(list) = value.cast::<PyList>() else {
            return false;
        };
        return list.iter().all(|v| same_json(c, &v, depth + 1));
    }
    if let Ok(tuple) = value.cast_exact::<PyTuple>() {
        return tuple.iter().all(|v| same_json(c, &v, depth + 1));
    }
    false
}
