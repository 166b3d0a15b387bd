//! Integer arguments. A Python int outside the Rust type an argument converts to is an
//! `InvalidArgument` naming the argument and its range ("start must be an int from 0 to
//! 18446744073709551615, got -1"), where PyO3's conversion raised an `OverflowError` naming
//! nothing. Used through `#[pyo3(from_py_with = ...)]` with the small named extractors the
//! [`int_args!`] macro makes, one per argument name and type, so the signatures keep their
//! Rust types. A non-int keeps PyO3's `TypeError`.

use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;

use super::errors::InvalidArgument;

/// `value` as shown in an error: its decimal digits, or its size when they would be long
/// (Python refuses to print an int of more than 4300 digits).
pub fn shown(value: &Bound<'_, PyAny>) -> String {
    match value.str() {
        Ok(text) if text.len().is_ok_and(|n| n <= 60) => text.to_string(),
        _ => match value.call_method0("bit_length") {
            Ok(bits) => format!("an int of {bits} bits"),
            Err(_) => "an int".to_owned(),
        },
    }
}

/// The error for an int past the range `[min, max]` of argument `name`.
pub fn out_of_range(
    name: &str,
    min: impl std::fmt::Display,
    max: impl std::fmt::Display,
    value: &Bound<'_, PyAny>,
) -> PyErr {
    InvalidArgument::new_err(format!(
        "{name} must be an int from {min} to {max}, got {}",
        shown(value)
    ))
}

/// Converts `value` to `T`; an int outside `T`'s range is an [`out_of_range`] error naming
/// `name`.
pub fn int_arg<'py, T>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py> + Bounded,
{
    match value.extract::<T>() {
        Ok(v) => Ok(v),
        Err(e) => {
            let e: PyErr = e.into();
            if e.is_instance_of::<PyOverflowError>(value.py()) {
                Err(out_of_range(name, T::MIN, T::MAX, value))
            } else {
                Err(e)
            }
        }
    }
}

/// The range of an integer type the bindings take.
pub trait Bounded {
    const MIN: i128;
    const MAX: i128;
}

macro_rules! bounded {
    ($($t:ty),*) => {$(
        impl Bounded for $t {
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
        }
    )*};
}

bounded!(u32, u64, usize, isize);

/// Named extractors for `#[pyo3(from_py_with = ...)]`: `name: Type => "argument"` makes
/// `fn name(value) -> PyResult<Type>`; `opt name: Type => "argument"` makes one for an
/// optional argument (None passes through as `None`).
macro_rules! int_args {
    ($($(#[$opt:ident])? $f:ident: $t:ident => $name:literal;)*) => {$(
        int_args!(@one $($opt)? $f $t $name);
    )*};
    (@one $f:ident $t:ident $name:literal) => {
        pub fn $f(value: &Bound<'_, PyAny>) -> PyResult<$t> {
            int_arg(value, $name)
        }
    };
    (@one optional $f:ident $t:ident $name:literal) => {
        pub fn $f(value: &Bound<'_, PyAny>) -> PyResult<Option<$t>> {
            if value.is_none() {
                Ok(None)
            } else {
                int_arg(value, $name).map(Some)
            }
        }
    };
}

int_args! {
    start: usize => "start";
    #[optional] end: usize => "end";
    #[optional] limit: usize => "limit";
    i: usize => "i";
    k: usize => "k";
    upto: usize => "upto";
    index: usize => "index";
    floor: usize => "floor";
    #[optional] expected_length: usize => "expected_length";
    expected_generation: u64 => "expected_generation";
    budget: u64 => "budget";
    fixed: u64 => "fixed";
    high: u64 => "high";
    low: u64 => "low";
    value: u64 => "value";
    reported_input_tokens: u64 => "reported_input_tokens";
    max_chars: usize => "max_chars";
    #[optional] tokens: u32 => "tokens";
    turn_start: u32 => "start";
    number: u32 => "number";
}
