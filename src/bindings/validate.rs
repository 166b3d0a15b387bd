//! `validate` and `repair_plan`: the core's [`crate::validate`] over a list of messages.
//!
//! Results cross as plain tuples; `ctxtrim.validate` turns them into typed objects.

use pyo3::prelude::*;

use super::convert::metas_of;
use crate::validate::{self as core, RepairOp, Violation};

/// `(kind, index, tool_use_id, related_index, description)`.
type ViolationRow = (&'static str, usize, Option<String>, Option<usize>, String);
/// `(op, index, position, ids)`.
type RepairRow = (&'static str, usize, usize, Vec<String>);

/// One `ViolationRow` per violation, ordered by message index.
#[pyfunction]
pub fn validate(messages: &Bound<'_, PyAny>) -> PyResult<Vec<ViolationRow>> {
    let (_, metas) = metas_of(messages, None)?;
    Ok(core::validate(&metas)
        .into_iter()
        .map(|v| {
            let text = v.to_string();
            let (kind, index, id, related) = match v {
                Violation::OrphanResult { index, tool_use_id } => {
                    ("orphan_result", index, Some(tool_use_id), None)
                }
                Violation::ResultBeforeCall {
                    index,
                    tool_use_id,
                    call_index,
                } => (
                    "result_before_call",
                    index,
                    Some(tool_use_id),
                    Some(call_index),
                ),
                Violation::DanglingCall { index, tool_use_id } => {
                    ("dangling_call", index, Some(tool_use_id), None)
                }
                Violation::DuplicateToolUseId {
                    index,
                    tool_use_id,
                    first_index,
                } => (
                    "duplicate_tool_use_id",
                    index,
                    Some(tool_use_id),
                    Some(first_index),
                ),
                Violation::DuplicateResult {
                    index,
                    tool_use_id,
                    first_index,
                } => (
                    "duplicate_result",
                    index,
                    Some(tool_use_id),
                    Some(first_index),
                ),
                Violation::NonUserFirstTurn { index } => ("non_user_first_turn", index, None, None),
            };
            (kind, index, id.map(String::from), related, text)
        })
        .collect())
}

/// The deterministic repair plan, as `(op, index, position, ids)` tuples:
/// `("drop_result", i, pos, [])`, `("rename_tool_use", i, pos, [new_id])`,
/// `("rename_result", i, pos, [new_id])`, `("insert_results", after, 0, ids)`,
/// `("insert_user_before", i, 0, [])`, `("drop_message", i, 0, [])`.
#[pyfunction]
pub fn repair_plan(messages: &Bound<'_, PyAny>) -> PyResult<Vec<RepairRow>> {
    let (_, metas) = metas_of(messages, None)?;
    Ok(core::repair_plan(&metas)
        .into_iter()
        .map(|op| match op {
            RepairOp::DropResult { index, result_pos } => {
                ("drop_result", index, result_pos, vec![])
            }
            RepairOp::RenameToolUse {
                index,
                use_pos,
                new_id,
            } => ("rename_tool_use", index, use_pos, vec![new_id.into()]),
            RepairOp::RenameResult {
                index,
                result_pos,
                new_id,
            } => ("rename_result", index, result_pos, vec![new_id.into()]),
            RepairOp::InsertResults {
                after,
                tool_use_ids,
            } => (
                "insert_results",
                after,
                0,
                tool_use_ids.into_iter().map(String::from).collect(),
            ),
            RepairOp::InsertUserBefore { index } => ("insert_user_before", index, 0, vec![]),
            RepairOp::DropMessage { index } => ("drop_message", index, 0, vec![]),
        })
        .collect())
}
