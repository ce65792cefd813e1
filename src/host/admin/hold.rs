//! Pausing and resuming one call (`POST /admin/api/calls/pause`,
//! `/calls/resume`), in the object that keeps it. A paused call's journal
//! says so (`Journal::held`: why, and by whom); every round of it parks,
//! as under a paused tool, until it is resumed. The machine ([`kept`])
//! says which calls may be paused or resumed: not one whose round is
//! running (its end would be stored over the pause), not a finished one.

use super::super::Stores;
use super::each::{each, Keeper};
use crate::admin::summary;
use crate::effects::{Effect, Reply};
use crate::engine::Journal;
use crate::error::McpError;
use crate::kept::{self, Event, Status, Transition};
use crate::server::task::TaskHost;
use crate::server::{Env, Server};

/// Pauses (`hold`) or resumes the calls named, for `operator`.
pub(super) fn hold(
    server: &Server,
    stores: &Stores<'_>,
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
    each(ids, |id, keeper, effects| match keeper {
        Keeper::Durable(call_id) => durable(stores, call_id, &change),
        Keeper::Session => session(stores, id, &change),
        Keeper::Task => task(server, stores, id, &change, effects),
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
    fn apply(&self, status: Status, journal: &mut Journal) -> Result<(), &'static str> {
        if self.held.is_none() && journal.held.is_none() {
            return Err("not paused");
        }
        if let Transition::No(why) = kept::transition(status, self.event) {
            return Err(why.why());
        }
        if self.held.is_none() || journal.held.is_none() {
            journal.held.clone_from(&self.held);
            if let Some(t) = journal.trail.as_mut() {
                t.note(self.now_ms, self.note.clone());
            }
        }
        Ok(())
    }
}

fn durable(
    stores: &Stores<'_>,
    call_id: &str,
    change: &Change,
) -> Result<Result<(), &'static str>, McpError> {
    let Some(mut call) = stores.call.load(call_id)? else {
        return Ok(Err("not found"));
    };
    if call.tomb {
        return Ok(Err("not found"));
    }
    // A claimed row is `working` (skipped: `running`), even a claim past
    // its timeout: the next retry takes that over (`server/call.rs`), and
    // the pause goes in once it has ended.
    if let Err(why) = change.apply(call.status, &mut call.journal) {
        return Ok(Err(why));
    }
    call.status = summary::paused(&call.journal);
    call.updated_ms = change.now_ms;
    stores.call.save(call_id, &call)?;
    Ok(Ok(()))
}

fn session(
    stores: &Stores<'_>,
    id: &str,
    change: &Change,
) -> Result<Result<(), &'static str>, McpError> {
    let Some((meta, mut call)) = super::each::session_call(stores, id)? else {
        return Ok(Err("not found"));
    };
    let status = call.summary(&meta).status;
    if let Err(why) = change.apply(status, &mut call.journal) {
        return Ok(Err(why));
    }
    stores.session.put_call(&call)?;
    Ok(Ok(()))
}

fn task(
    server: &Server,
    stores: &Stores<'_>,
    id: &str,
    change: &Change,
    effects: &mut Vec<Effect>,
) -> Result<Result<(), &'static str>, McpError> {
    let Some(mut t) = stores
        .task
        .load()?
        .filter(|t| summary::task_id(&t.task_id) == id)
    else {
        return Ok(Err("not found"));
    };
    let status = t.summary().status;
    if let Err(why) = change.apply(status, &mut t.journal) {
        return Ok(Err(why));
    }
    t.updated_ms = change.now_ms;
    let host = TaskHost {
        task_id: t.task_id.clone(),
        store: stores.task,
    };
    // Stored as every change of a task is: the hub's index (what a
    // listing reads of tasks) hears of it.
    effects.extend(crate::server::task::store(server, &host, t, change.now_ms)?);
    // Resumed: its alarm runs it now (a parked task otherwise waits for
    // its next retry).
    if change.held.is_none() {
        effects.push(Effect::WakeAt(change.now_ms));
    }
    Ok(Ok(()))
}
