//! Pausing and resuming one call (`POST /admin/api/calls/pause`,
//! `/calls/resume`), in the object that keeps it. A paused call's journal
//! says so (`Journal::held`: why, and by whom); every round of it parks,
//! as under a paused tool, until it is resumed. The machine ([`kept`])
//! says which calls may be paused or resumed: not one whose round is
//! running (its end would be stored over the pause), not a finished one.

use super::super::Stores;
use super::each::each;
use crate::effects::Reply;
use crate::engine::Journal;
use crate::error::McpError;
use crate::kept::{self, Event, Status, Transition};
use crate::server::{Env, Server};

/// Pauses (`hold`) or resumes the calls named, for `operator`.
pub(super) fn hold<'s>(
    server: &Server,
    stores: &'s Stores<'s>,
    env: &Env,
    (ids, operator): (&[String], &str),
    hold: bool,
) -> Result<Reply, McpError> {
    let why = match operator {
        "" => "paused by an operator".to_string(),
        by => format!("paused by an operator ({by})"),
    };
    let note = match (hold, operator) {
        (true, _) => why.clone(),
        (false, "") => "resumed by an operator".to_string(),
        (false, by) => format!("resumed by an operator ({by})"),
    };
    let change = Change {
        event: if hold { Event::Hold } else { Event::Release },
        held: hold.then_some(why),
        note,
        now_ms: env.now_ms,
    };
    each(stores, ids, |mut k| {
        if k.tomb() {
            return Ok(Err("not found"));
        }
        // A claimed call is `working` (skipped: `running`), even a durable
        // claim past its timeout: the next retry takes that over
        // (`server/call.rs`), and the pause goes in once it has ended.
        let status = k.status();
        match change.apply(status, k.journal()) {
            Ok(to) => k.set_status(to),
            Err(why) => return Ok(Err(why)),
        }
        // Resumed: a task's alarm runs it now.
        k.store(server, change.now_ms, change.held.is_none())
            .map(Ok)
    })
}

/// What a pause or a resume does.
struct Change {
    event: Event,
    /// The journal's `held` after it.
    held: Option<String>,
    /// What the call's trail notes of it.
    note: String,
    now_ms: u64,
}

impl Change {
    /// Applies it to a call that is `status` with `journal`, as the
    /// machine says; `Err(why)` when it refuses (or there is nothing to
    /// resume). Pausing a paused call again is done (idempotent).
    fn apply(&self, status: Status, journal: &mut Journal) -> Result<Status, &'static str> {
        if self.held.is_none() && journal.held.is_none() {
            return Err("not paused");
        }
        let to = match kept::transition(status, self.event) {
            Transition::To(to) => to,
            Transition::No(why) => return Err(why.why()),
            Transition::Tombstone | Transition::Gone => return Err("not found"),
        };
        if self.held.is_none() || journal.held.is_none() {
            journal.held.clone_from(&self.held);
            if let Some(t) = journal.trail.as_mut() {
                t.note(self.now_ms, self.note.clone());
            }
        }
        Ok(to)
    }
}
