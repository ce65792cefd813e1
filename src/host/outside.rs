//! Something for a kept call from outside its client's requests ([`Outside`]:
//! a URL elicitation's page completed, an operator's answer on the call's
//! behalf, an operator's rewind), delivered in the object that keeps the
//! call: a durable call's journal takes it (its client's next retry goes
//! on), a session's (the next round runs now and goes to its stream), a
//! task's (its alarm runs it now). The one place a page and the admin API
//! reach a waiting call; the machine ([`kept`]) says whether it may.

use super::Stores;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::Outside;
use crate::error::McpError;
use crate::kept::{self, Event, Refused, Transition};
use crate::server::task::TaskHost;
use crate::server::{Env, Server};
use crate::session::Turn;

/// Why it was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// The call's round is running right now: try again.
    Busy,
    /// Nothing there waits for it (why).
    No(&'static str),
}

/// Delivers `what` to the call kept at `home`. `turn` is the request that
/// brought it (a page's); `None` for an operator's.
pub(crate) async fn deliver(
    server: &Server,
    env: &Env,
    stores: &Stores<'_>,
    turn: Option<Turn>,
    home: &Home,
    what: Outside,
) -> Result<Result<Vec<Effect>, NotTaken>, McpError> {
    match home {
        Home::Call(call_id) => durable(stores, env, call_id, what),
        Home::Session(_, call_id) => {
            let done =
                crate::session::take_outside(server, stores.session, env, turn, call_id, what)
                    .await?;
            Ok(match done {
                Ok(pushes) => Ok(pushes.into_iter().map(Effect::Push).collect()),
                Err(crate::session::Refused::Busy) => Err(NotTaken::Busy),
                Err(crate::session::Refused::Not(why)) => Err(NotTaken::No(why)),
            })
        }
        Home::Task(task_id) => {
            let host = TaskHost {
                task_id: task_id.clone(),
                store: stores.task,
            };
            let done = crate::server::task::take_outside(server, &host, env.now_ms, what)?;
            Ok(done.map_err(NotTaken::No))
        }
    }
}

/// A durable call takes it into its journal; its client's next retry
/// runs the round.
fn durable(
    stores: &Stores<'_>,
    env: &Env,
    call_id: &str,
    what: Outside,
) -> Result<Result<Vec<Effect>, NotTaken>, McpError> {
    let Some(mut call) = stores.call.load(call_id)? else {
        return Ok(Err(NotTaken::No("not found")));
    };
    if call.tomb {
        return Ok(Err(NotTaken::No("not found")));
    }
    // It lets a waiting call go on: a wake, as the machine sees it.
    match kept::transition(call.status, Event::Wake) {
        Transition::To(_) => {}
        Transition::No(Refused::Running) => return Ok(Err(NotTaken::Busy)),
        Transition::No(why) => return Ok(Err(NotTaken::No(why.why()))),
        Transition::Tombstone | Transition::Gone => return Ok(Err(NotTaken::No("not found"))),
    }
    if let Err(why) = call.journal.take_outside(what, env.now_ms) {
        return Ok(Err(NotTaken::No(why)));
    }
    call.status = kept::summary::paused(&call.journal);
    call.updated_ms = env.now_ms;
    stores.call.save(call_id, &call)?;
    Ok(Ok(Vec::new()))
}
