//! What every kind of kept call shares as an operator reads it: its admin
//! id, the parts of its [`CallSummary`] its journal holds, and its
//! [`CallDetail`] (its history). Each keeper's record makes its own
//! summary beside it (`StoredCall::summary`, `SessionCall::summary`,
//! `TaskRecord::summary`), from these. Nothing here reads a clock or
//! storage.

use std::collections::BTreeSet;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::model::{AnswerView, CallDetail, CallSummary, EffectView, Kind, Status};
use crate::engine::{hex, Journal, RoundEnd};

/// The admin id prefix of each kind.
pub const DURABLE_PREFIX: &str = "d.";
/// See [`DURABLE_PREFIX`].
pub const TASK_PREFIX: &str = "t.";
/// See [`DURABLE_PREFIX`].
pub const SESSION_PREFIX: &str = "s.";

/// What an operator's screen shows in place of a task's or a session's
/// id: those ids are bearer capabilities (whoever holds one reaches the
/// task or the session). 16 hex digits of its SHA-256.
pub fn handle_of(id: &str) -> String {
    hex(&Sha256::digest(id.as_bytes())[..8])
}

/// A durable call's admin id.
pub fn durable_id(call_id: &str) -> String {
    format!("{DURABLE_PREFIX}{call_id}")
}

/// A task's admin id.
pub fn task_id(task_id: &str) -> String {
    format!("{TASK_PREFIX}{}", handle_of(task_id))
}

/// A session's admin id prefix (`s.<h>`).
pub fn session_handle(session_id: &str) -> String {
    format!("{SESSION_PREFIX}{}", handle_of(session_id))
}

/// The admin id of a session's call `which` (its call id).
pub fn session_call_id(session_id: &str, which: &str) -> String {
    format!("{}.{which}", session_handle(session_id))
}

/// How the last round of a kept call ended, per its trail.
pub fn last_end(j: &Journal) -> Option<(RoundEnd, Option<String>)> {
    let m = j.trail.as_ref()?.marks.last()?;
    Some((m.end, m.why.clone()))
}

/// The methods a journal waits on, each once.
fn waiting_on(j: &Journal) -> Vec<String> {
    let set: BTreeSet<&str> = j.pending.values().map(|r| r.method.as_str()).collect();
    set.into_iter().map(str::to_string).collect()
}

/// The parts every kind shares, from the journal.
pub fn base(id: String, kind: Kind, tool: String, status: Status, j: &Journal) -> CallSummary {
    let trail = j.trail.as_ref();
    // Paused by an operator: parked until resumed, and why.
    let (status, held) = match &j.held {
        Some(why) if !status.is_final() => (Status::Parked, Some(why.clone())),
        _ => (status, None),
    };
    let note = match status {
        _ if held.is_some() => held,
        Status::Parked | Status::Failed | Status::Cancelled => last_end(j).and_then(|(_, w)| w),
        _ => None,
    };
    CallSummary {
        id,
        kind,
        tool,
        status,
        principal: trail.map(|t| t.owner.clone()).unwrap_or_default(),
        created_ms: trail.map_or(0, |t| t.started_ms),
        updated_ms: j.last_marked_ms(),
        round: j.round,
        waiting_on: if status.is_final() {
            Vec::new()
        } else {
            waiting_on(j)
        },
        note,
        code: j.code.last().cloned().unwrap_or_default(),
    }
}

/// A paused call's status: parked when its last round was, else waiting.
pub fn paused(j: &Journal) -> Status {
    if j.held.is_some() {
        return Status::Parked;
    }
    match last_end(j) {
        Some((RoundEnd::Parked, _)) => Status::Parked,
        _ => Status::Waiting,
    }
}

/// A call whole: `summary`, its arguments, its journal's history. The
/// values of answers are hidden unless `shows(key)` (the tool's choice).
pub fn detail(
    summary: CallSummary,
    arguments: Value,
    j: &Journal,
    shows: &dyn Fn(&str) -> bool,
) -> CallDetail {
    let trail = j.trail.as_deref().cloned().unwrap_or_default();
    let answers = j
        .answers
        .iter()
        .map(|(key, a)| {
            let outcome = match &a.outcome {
                Err(_) => "error",
                Ok(v) => match v["action"].as_str() {
                    Some("accept") => "accepted",
                    Some("decline") => "declined",
                    Some("cancel") => "cancelled",
                    _ => "answered",
                },
            };
            let value = match (&a.outcome, shows(key)) {
                (Ok(v), true) => v.clone(),
                (Err(e), true) => e.clone(),
                _ => Value::String("[hidden]".into()),
            };
            AnswerView {
                key: key.clone(),
                at_ms: trail.answered.get(key).copied().unwrap_or(0),
                outcome: outcome.to_string(),
                value,
                by: a.by.clone(),
            }
        })
        .collect();
    let effects = j
        .once
        .keys()
        .map(|key| EffectView {
            key: key.clone(),
            at_ms: trail.effects.get(key).copied().unwrap_or(0),
        })
        .collect();
    let pending = j
        .pending
        .iter()
        .map(|(key, r)| crate::engine::Asked {
            key: key.clone(),
            method: r.method.clone(),
            message: r.params["message"].as_str().map(str::to_string),
        })
        .collect();
    let lived = summary.updated_ms.saturating_sub(summary.created_ms);
    CallDetail {
        arguments,
        rounds: trail.marks.clone(),
        pending,
        answers,
        effects,
        code_versions: j.code.clone(),
        waited_ms: trail.waited_ms,
        worked_ms: lived.saturating_sub(trail.waited_ms),
        trace_id: trail.trace_id.clone(),
        notes: trail.notes.clone(),
        summary,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::{InputRequest, Invocation};
    use crate::store::{CallStatus, StoredCall};

    fn paused_journal() -> Journal {
        let mut j = Journal::new();
        j.invocation = Some(Invocation {
            tool: "deploy".into(),
            arguments: json!({"service": "api"}),
        });
        j.pending.insert(
            "ok".into(),
            InputRequest::new("elicitation/create", json!({"message": "Ship it?"})),
        );
        j.round = 1;
        j.mark(1_000, RoundEnd::Paused, None, "ada");
        j
    }

    fn stored(status: CallStatus, journal: Journal) -> StoredCall {
        StoredCall {
            version: journal.round,
            status,
            claimed_at_ms: 0,
            journal,
            last_reply: None,
            updated_ms: 1_000,
        }
    }

    #[test]
    fn a_durable_call_is_listed_with_its_tool_owner_and_what_it_waits_on() {
        let s = stored(CallStatus::AwaitingInput, paused_journal()).summary("abc");
        assert_eq!(s.id, "d.abc");
        assert_eq!(s.tool, "deploy");
        assert_eq!(s.status, Status::Waiting);
        assert_eq!(s.principal, "ada");
        assert_eq!(s.waiting_on, vec!["elicitation/create".to_string()]);
        let mut parked = paused_journal();
        parked.mark(2_000, RoundEnd::Parked, Some("the code changed"), "ada");
        let s = stored(CallStatus::AwaitingInput, parked).summary("abc");
        assert_eq!(s.status, Status::Parked);
        assert_eq!(s.note.as_deref(), Some("the code changed"));
        let s = stored(CallStatus::Cancelled, paused_journal()).summary("abc");
        assert_eq!(s.status, Status::Cancelled);
        assert!(s.waiting_on.is_empty());
    }

    #[test]
    fn an_answer_is_hidden_unless_the_tool_shows_it() {
        let mut j = paused_journal();
        j.accept_answers([(
            "ok".to_string(),
            Ok(json!({"action": "accept", "content": {"secret": "hunter2"}})),
        )]);
        j.mark(5_000, RoundEnd::Completed, None, "ada");
        let s = stored(CallStatus::Completed, j.clone()).summary("abc");
        let d = detail(s.clone(), json!({}), &j, &|_| false);
        assert_eq!(d.answers[0].value, json!("[hidden]"));
        assert_eq!(d.answers[0].outcome, "accepted");
        assert_eq!(d.answers[0].at_ms, 5_000);
        assert!(!serde_json::to_string(&d)
            .expect("in a test")
            .contains("hunter2"));
        let d = detail(s, json!({}), &j, &|k| k == "ok");
        assert_eq!(d.answers[0].value["content"]["secret"], "hunter2");
        assert_eq!(d.waited_ms, 4_000);
        assert_eq!(d.rounds.len(), 2);
    }

    #[test]
    fn task_and_session_ids_are_digests_never_the_capability() {
        let id = "task-secret-capability";
        assert!(!task_id(id).contains(id));
        assert_eq!(task_id(id).len(), 2 + 16);
        assert_eq!(task_id(id), task_id(id));
        assert_ne!(session_handle("a"), session_handle("b"));
    }
}
