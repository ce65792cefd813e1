//! An operation on named calls (cancel, pause, resume), each in the keeper
//! that holds it: the one place an admin id is told apart by its keeper.

use serde_json::json;

use super::super::Stores;
use crate::admin::summary::{self, DURABLE_PREFIX, SESSION_PREFIX, TASK_PREFIX};
use crate::admin::Done;
use crate::effects::{Effect, Reply};
use crate::elicitation::Home;
use crate::error::McpError;
use crate::http::HttpResponse;
use crate::session::{SessionCall, SessionMeta};

/// Which keeper an admin id names.
pub(super) enum Keeper<'a> {
    /// A durable call: its call id.
    Durable(&'a str),
    /// A session's call (`s.<session digest>.<call id>`).
    Session,
    /// A task (`t.<task id digest>`).
    Task,
}

/// What acting on one call came to: done, or skipped with why.
pub(super) type Outcome = Result<Result<(), &'static str>, McpError>;

/// Runs `act` on each id in its keeper (an id of none is not found) and
/// answers `{"done", "skipped"}` with the effects `act` added.
pub(super) fn each(
    ids: &[String],
    mut act: impl FnMut(&str, Keeper<'_>, &mut Vec<Effect>) -> Outcome,
) -> Result<Reply, McpError> {
    let mut done = Done::default();
    let mut effects = Vec::new();
    for id in ids {
        let outcome = match keeper_of(id) {
            Some(k) => act(id, k, &mut effects)?,
            None => Err("not found"),
        };
        match outcome {
            Ok(()) => done.done.push(id.clone()),
            Err(why) => {
                done.skipped.insert(id.clone(), why.to_string());
            }
        }
    }
    Ok(Reply {
        response: HttpResponse::json(200, &json!(done)),
        effects,
    })
}

/// Which keeper `id` names, if any.
fn keeper_of(id: &str) -> Option<Keeper<'_>> {
    if let Some(call_id) = id.strip_prefix(DURABLE_PREFIX) {
        Some(Keeper::Durable(call_id))
    } else if id.starts_with(SESSION_PREFIX) {
        Some(Keeper::Session)
    } else if id.starts_with(TASK_PREFIX) {
        Some(Keeper::Task)
    } else {
        None
    }
}

/// Where the call whose admin id is `id` is kept, if this object keeps it
/// (as a page's elicitation id names it).
pub(super) fn home_of(stores: &Stores<'_>, id: &str) -> Result<Option<Home>, McpError> {
    Ok(match keeper_of(id) {
        Some(Keeper::Durable(call_id)) => Some(Home::Call(call_id.to_string())),
        Some(Keeper::Session) => {
            session_call(stores, id)?.map(|(meta, call)| Home::Session(meta.id, call.call_id))
        }
        Some(Keeper::Task) => stores
            .task
            .load()?
            .filter(|t| summary::task_id(&t.task_id) == id)
            .map(|t| Home::Task(t.task_id)),
        None => None,
    })
}

/// The session's call whose admin id is `id`, with its session, if this
/// object keeps it.
pub(super) fn session_call(
    stores: &Stores<'_>,
    id: &str,
) -> Result<Option<(SessionMeta, SessionCall)>, McpError> {
    let Some(meta) = stores.session.meta()? else {
        return Ok(None);
    };
    let call = stores
        .session
        .calls()?
        .into_iter()
        .find(|c| summary::session_call_id(&meta.id, c.admin_key()) == id);
    Ok(call.map(|c| (meta, c)))
}
