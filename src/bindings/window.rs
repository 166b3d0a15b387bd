//! `cut_window`: one call into the core decides a cut strategy's window, on a list or a log.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySequence};

use super::facts::fetch;
use super::log::PyMessageLog;
use super::tokens::encoding_of;
use crate::tail::{decide_from_end, FIRST_REGION};
use crate::tokens::Encoding;
use crate::window::{decide, keep_all, Options, Rule};

/// `(ranges, unchanged, over_budget)`: the `[start, end)` ranges a cut strategy keeps.
type WindowRow = (Vec<(usize, usize)>, bool, bool);

fn rule_of(rule: &str, value: u64) -> PyResult<Rule> {
    let count = || usize::try_from(value).unwrap_or(usize::MAX);
    Ok(match rule {
        "budget" => Rule::Budget(value),
        "turns" => Rule::LastTurns(count()),
        "rounds" => Rule::LastRounds(count()),
        "messages" => Rule::LastMessages(count()),
        _ => return Err(PyValueError::new_err(format!("unknown cut rule {rule:?}"))),
    })
}

/// The window a cut rule keeps of `source` (a list of messages, any sequence, or a
/// `MessageLog`): `rule` is `"budget"`, `"turns"`, `"rounds"` or `"messages"` with `value`
/// its budget or count.
///
/// On a list only the head and the end are read, as far back as the decision needs, and each
/// message's facts come from its cache (read once per message object, ever); `counter` (an
/// exact `TokenCounter`) is asked once per message. A log brings its own counts.
///
/// With `convert`, `source` is a framework's list (any sequence) and message `i` is
/// `convert(source[i], i)`, called only for the items the decision reads (the drop-ins pass
/// their skeleton cache): the same reader as for a list of messages, over another kind of
/// item.
#[pyfunction]
#[pyo3(signature = (source, rule, value, *, pin_task = true, start_with_user = true, counter = None, encoding = None, convert = None))]
#[allow(clippy::too_many_arguments)]
pub fn cut_window(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    rule: &str,
    value: u64,
    pin_task: bool,
    start_with_user: bool,
    counter: Option<&Bound<'_, PyAny>>,
    encoding: Option<&str>,
    convert: Option<&Bound<'_, PyAny>>,
) -> PyResult<WindowRow> {
    let rule = rule_of(rule, value)?;
    let options = Options {
        pin_task,
        start_with_user,
    };
    let window = if let Ok(log) = source.cast::<PyMessageLog>() {
        let log = log.get().indexed_clone(py);
        decide(&log, rule, options).unwrap_or_else(|_| keep_all(log.len()))
    } else if let Some(convert) = convert {
        let encoding = encoding.map_or(Ok(Encoding::Cl100k), encoding_of)?;
        let seq = source.cast::<PySequence>()?;
        let len = seq.len()?;
        decide_from_end(len, rule, options, FIRST_REGION, |i| {
            let item = convert.call1((seq.get_item(i)?, i))?;
            fetch(&item, encoding, counter, || format!("convert(source[{i}])"))
        })?
    } else {
        let encoding = encoding.map_or(Ok(Encoding::Cl100k), encoding_of)?;
        let list = match source.cast::<PyList>() {
            Ok(list) => list.clone(),
            Err(_) => source.cast::<PySequence>()?.to_list()?,
        };
        let len = list.len();
        decide_from_end(len, rule, options, FIRST_REGION, |i| {
            let item = list.get_item(i)?;
            fetch(&item, encoding, counter, || format!("messages[{i}]"))
        })?
    };
    Ok((window.ranges, window.unchanged, window.over_budget))
}
