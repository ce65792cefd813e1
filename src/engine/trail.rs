//! The trail: what an operator reads of a kept call's past. Each time a
//! keeper stores a call it [`Trail::mark`]s the round it ran: when, on which
//! code, how it ended, what it asked; and stamps the answers and effects
//! that appeared since with that time. It rides in the journal the server
//! keeps (a durable call's, a session's, a task's) and never in a sealed
//! token ([`super::Journal::compacted`] drops it): only kept calls are
//! listed, and a token stays small.
//!
//! It holds no answer's value and no credential: keys, methods, the
//! question's message (written by the tool's code), times and a principal
//! name.

use serde::{Deserialize, Serialize};

use crate::vec_map::VecMap;

/// How a round ended, as the trail records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundEnd {
    /// It asked the client something (or paused for a timer).
    Paused,
    /// It finished with a result.
    Completed,
    /// It finished with an error (a JSON-RPC error, or a tool error result).
    Failed,
    /// The code changed so that it cannot be replayed: kept for a fix.
    Parked,
    /// An operator or the client cancelled it.
    Cancelled,
}

/// One question a round asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    /// The key the body asked under.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`, or a
    /// server-side pause (`durable-mcp/timer` …).
    pub method: String,
    /// An elicitation's message, as the code wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One round, as it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    /// The round's number (1 for the call's first run).
    pub round: u32,
    /// When it was stored (ms since the epoch).
    pub at_ms: u64,
    /// The code version that ran it (as `Journal::code` records it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// How it ended.
    pub end: RoundEnd,
    /// What it asked (a paused round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// Why (parked, failed, cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A kept call's past.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trail {
    /// Who started the call (the principal's name; `""` on an open server).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    /// When the call started (ms since the epoch).
    pub started_ms: u64,
    /// The W3C trace id every round's span carries (32 hex digits): the
    /// client's, from `_meta.traceparent` on the first round, or drawn then.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// The rounds, oldest first (the last [`MAX_MARKS`] are kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
    /// When each answer came (by key).
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub answered: VecMap<String, u64>,
    /// When each `once` effect ran (by key).
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub effects: VecMap<String, u64>,
    /// How long the call has waited for the client (a person, a model)
    /// to answer, in ms: from each round that asked the client something
    /// to the next round.
    #[serde(default)]
    pub waited_ms: u64,
    /// What operators did to the call (paused, resumed, answered for it,
    /// asked again), oldest first (the last [`MAX_NOTES`] are kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// The upgrade point ([`Cx::upgrade_point`](super::Cx::upgrade_point))
    /// where a pinned call left an earlier version's body for the current
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_at: Option<String>,
}

/// One thing an operator did to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// What, in words (`answered "approve" (operator:ada)`).
    pub what: String,
}

/// The operator's notes a call keeps.
pub const MAX_NOTES: usize = 32;

/// A long-running call keeps its first rounds and its latest ones.
pub const MAX_MARKS: usize = 64;

impl RoundEnd {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Parked => "parked",
            Self::Cancelled => "cancelled",
        }
    }
}

impl Trail {
    /// The last round's mark.
    pub fn last(&self) -> Option<&Mark> {
        self.marks.last()
    }

    /// Whether the call waits for the client now: its last round asked
    /// something only the client answers.
    fn waits_for_client(&self) -> bool {
        self.last().is_some_and(|m| {
            m.end == RoundEnd::Paused
                && m.asked
                    .iter()
                    .any(|a| !a.method.starts_with("durable-mcp/"))
        })
    }
}

impl Trail {
    /// Notes `what` an operator did at `now_ms`.
    pub fn note(&mut self, now_ms: u64, what: String) {
        self.notes.push(Note {
            at_ms: now_ms,
            what,
        });
        if self.notes.len() > MAX_NOTES {
            self.notes.remove(0);
        }
    }

    /// A trail for a call `owner` starts at `now_ms`.
    pub(super) fn new(owner: &str, now_ms: u64) -> Self {
        Self {
            owner: owner.to_string(),
            started_ms: now_ms,
            ..Self::default()
        }
    }

    /// Records `mark`: the wait since the last round (if that one waited
    /// for the client), and the time of each answer and effect not seen
    /// before.
    pub(super) fn record<'a>(
        &mut self,
        mark: Mark,
        answers: impl Iterator<Item = &'a String>,
        effects: impl Iterator<Item = &'a String>,
    ) {
        let now_ms = mark.at_ms;
        if self.waits_for_client() {
            let since = self.last().map_or(now_ms, |m| m.at_ms);
            self.waited_ms += now_ms.saturating_sub(since);
        }
        for key in answers {
            self.answered.or_insert_with(key.clone(), || now_ms);
        }
        for key in effects {
            self.effects.or_insert_with(key.clone(), || now_ms);
        }
        // A round that ran again (a parked call retried, a cancel after a
        // pause) replaces nothing: each is a line of the history.
        self.marks.push(mark);
        if self.marks.len() > MAX_MARKS {
            // Keep the first round (how it started) and the latest.
            self.marks.remove(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::{InputRequest, Journal};

    #[test]
    fn a_trail_stamps_answers_and_effects_when_they_first_appear_and_sums_the_wait() {
        let mut j = Journal::new();
        j.round = 1;
        j.pending.insert(
            "ok".into(),
            InputRequest::new(
                "elicitation/create",
                json!({"message": "Deploy?", "requestedSchema": {"type": "object"}}),
            ),
        );
        j.mark(1_000, RoundEnd::Paused, None, "ada");
        let t = j.trail.as_ref().expect("in a test");
        assert_eq!(t.owner, "ada");
        assert_eq!(t.started_ms, 1_000);
        assert_eq!(t.marks[0].asked[0].message.as_deref(), Some("Deploy?"));
        // The user answers 4 s later; an effect runs; the call completes.
        j.accept_answers([(
            "ok".to_string(),
            Ok(json!({"action": "accept", "content": {}})),
        )]);
        j.once.insert("deploy".into(), json!(1).into());
        j.mark(5_000, RoundEnd::Completed, None, "someone else");
        let t = j.trail.as_ref().expect("in a test");
        assert_eq!(t.owner, "ada", "the owner is the starter's");
        assert_eq!(t.answered.get("ok"), Some(&5_000));
        assert_eq!(t.effects.get("deploy"), Some(&5_000));
        assert_eq!(t.waited_ms, 4_000);
        assert_eq!(t.marks.len(), 2);
        assert!(t.marks[1].asked.is_empty());
        // A token never carries it.
        assert!(j.clone().compacted().trail.is_none());
    }

    #[test]
    fn a_timer_is_not_waiting_for_the_client_and_a_long_call_keeps_first_and_latest_rounds() {
        let mut j = Journal::new();
        j.pending.insert(
            "nap".into(),
            InputRequest::new(crate::engine::TIMER, json!({"ms": 10})),
        );
        j.mark(0, RoundEnd::Paused, None, "");
        j.mark(10_000, RoundEnd::Paused, None, "");
        assert_eq!(j.trail.as_ref().expect("in a test").waited_ms, 0);
        for i in 0..100u64 {
            j.round = u32::try_from(i).expect("in a test") + 2;
            j.mark(20_000 + i, RoundEnd::Paused, None, "");
        }
        let t = j.trail.as_ref().expect("in a test");
        assert_eq!(t.marks.len(), MAX_MARKS);
        assert_eq!(t.marks[0].at_ms, 0);
        assert_eq!(t.marks.last().expect("in a test").at_ms, 20_099);
    }
}
