//! A kept call as listed: its admin id (what an operator names it by),
//! its kind, and its [`CallSummary`] (identity, owner, tool, times, the one
//! status), the parts of it its journal holds. Each keeper's record makes
//! its summary from these (`StoredCall::summary`, `SessionCall::summary`,
//! `TaskRecord::summary`); the operator's view (`crate::admin`) reads them.
//! Nothing here reads a clock or storage.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Status;
use crate::engine::{hex, Journal, RoundEnd};
use crate::vec_map::VecSet;

/// Where a call is kept: its wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A durable tool's call on a stateless wire (2026-07-28 MRTR, the
    /// saga methods, the streamless sketch), kept in a call shard.
    Durable,
    /// A call on a 2025-11-25 session, kept in the session's object.
    Session,
    /// A task (the tasks extension), kept in its own object.
    Task,
}

impl Kind {
    /// Every kind, in the order listings show them.
    pub const ALL: [Kind; 3] = [Kind::Durable, Kind::Session, Kind::Task];

    /// Reads a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Durable => "durable",
            Self::Session => "session",
            Self::Task => "task",
        }
    }
}

/// One call in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSummary {
    /// The admin id: `d.<call id>` (a durable call), `t.<h>` (a task),
    /// `s.<h>.<stream>` (a session's call), where `<h>` is a digest of the
    /// task's or session's id (those ids are bearer capabilities: an
    /// operator's screen never shows them).
    pub id: String,
    /// Its wire.
    pub kind: Kind,
    /// The tool (or prompt, or resource) it runs.
    pub tool: String,
    /// Where it is.
    pub status: Status,
    /// Who started it (the principal's name; `""` on an open server).
    pub principal: String,
    /// When it started (ms since the epoch).
    pub created_ms: u64,
    /// When it last changed (ms since the epoch): a paused call's age runs
    /// from here.
    pub updated_ms: u64,
    /// Rounds run so far.
    pub round: u32,
    /// What it waits on (the methods of its pending questions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_on: Vec<String>,
    /// A note: why it is parked, failed or cancelled; a task's status
    /// message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The code version that ran its last round.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// The tool's version its last round ran on ([`Tool::version`](crate::Tool::version);
    /// `""`: none, the tool declared none or the call has not run yet).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

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

/// The handle the index keeps a task's or a session's calls under, from
/// one of their admin ids: the id up to its second dot (`t.<h>`, or
/// `s.<h>` of `s.<h>.<call id>`).
pub fn index_handle(id: &str) -> &str {
    match id.match_indices('.').nth(1) {
        Some((at, _)) => &id[..at],
        None => id,
    }
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
    // Each once, in order.
    let mut set = VecSet::new();
    for r in j.pending.values() {
        set.insert(r.method.as_str());
    }
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
        version: j.tool_version().unwrap_or_default().to_string(),
    }
}

/// How a call that ended ended, as its trail's last mark says: failed,
/// or completed (a round that ended cancelled by its client answered it
/// with its end).
pub fn finished(j: &Journal) -> Status {
    match last_end(j) {
        Some((RoundEnd::Failed, _)) => Status::Failed,
        _ => Status::Completed,
    }
}

/// Where a call the machine moved to `to` is kept: a call not going on
/// yet waits, or is parked while its journal says so (an operator holds
/// it, or its last round parked) until its next round.
pub fn kept_as(to: Status, j: &Journal) -> Status {
    match to {
        Status::Waiting | Status::Parked => paused(j),
        s => s,
    }
}

/// A paused call's status: parked when its last round was (or an
/// operator holds it), else waiting.
pub fn paused(j: &Journal) -> Status {
    if j.held.is_some() {
        return Status::Parked;
    }
    match last_end(j) {
        Some((RoundEnd::Parked, _)) => Status::Parked,
        _ => Status::Waiting,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_or_a_sessions_calls_are_indexed_under_their_handle() {
        let task = task_id("task-1");
        assert_eq!(index_handle(&task), task);
        let call = session_call_id("session-1", "c1");
        assert_eq!(index_handle(&call), session_handle("session-1"));
    }
}
