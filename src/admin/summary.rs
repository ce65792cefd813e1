//! A kept call whole, as an operator reads it: its [`CallDetail`] (its
//! history, values hidden unless the tool shows them). Its admin id and
//! summary are the kept call's own (`crate::kept::summary`, re-exported
//! here). Nothing here reads a clock or storage.

use serde_json::Value;

use super::model::{AnswerView, CallDetail, EffectView};
use crate::engine::Journal;
pub use crate::kept::summary::*;

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
    use crate::engine::{InputRequest, Invocation, RoundEnd};
    use crate::kept::Status;
    use crate::store::StoredCall;

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

    fn stored(status: Status, journal: Journal) -> StoredCall {
        StoredCall {
            version: journal.round,
            status,
            tomb: false,
            claimed_at_ms: 0,
            journal,
            last_reply: None,
            updated_ms: 1_000,
        }
    }

    #[test]
    fn a_durable_call_is_listed_with_its_tool_owner_and_what_it_waits_on() {
        let s = stored(Status::Waiting, paused_journal()).summary("abc");
        assert_eq!(s.id, "d.abc");
        assert_eq!(s.tool, "deploy");
        assert_eq!(s.status, Status::Waiting);
        assert_eq!(s.principal, "ada");
        assert_eq!(s.waiting_on, vec!["elicitation/create".to_string()]);
        let mut parked = paused_journal();
        parked.mark(2_000, RoundEnd::Parked, Some("the code changed"), "ada");
        let s = stored(Status::Parked, parked).summary("abc");
        assert_eq!(s.status, Status::Parked);
        assert_eq!(s.note.as_deref(), Some("the code changed"));
        let s = stored(Status::Cancelled, paused_journal()).summary("abc");
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
        let s = stored(Status::Completed, j.clone()).summary("abc");
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
