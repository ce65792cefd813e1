//! Something for a kept call from outside its client's requests ([`Outside`]:
//! a URL elicitation's page completed, an operator's answer on the call's
//! behalf, an operator's rewind), delivered in the object that keeps the
//! call: a durable call's journal takes it (its client's next retry goes
//! on), a session's (the next round runs now and goes to its stream), a
//! task's (its alarm runs it now). The one place a page and the admin API
//! reach a waiting call; the machine ([`kept`]) says whether it may.

use super::kept;
use super::Stores;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::Outside;
use crate::error::McpError;
use crate::kept::{Event, Refused, Transition};
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
pub(crate) async fn deliver<'s>(
    server: &Server,
    env: &Env,
    stores: &'s Stores<'s>,
    turn: Option<Turn>,
    home: &Home,
    what: Outside,
) -> Result<Result<Vec<Effect>, NotTaken>, McpError> {
    if let Home::Session(_, call_id) = home {
        return session(server, env, stores, turn, call_id, what).await;
    }
    let Some(k) = kept::load(stores, home)?.filter(|k| !k.tomb()) else {
        return Ok(Err(NotTaken::No("not found")));
    };
    // It lets a waiting call go on: a wake, as the machine sees it.
    match crate::kept::transition(k.status(), Event::Wake) {
        // Where it goes then is its keeper's to say, from what it took.
        Transition::To(_) => {}
        Transition::No(Refused::Running) => return Ok(Err(NotTaken::Busy)),
        Transition::No(why) => return Ok(Err(NotTaken::No(why.why()))),
        Transition::Tombstone | Transition::Gone => return Ok(Err(NotTaken::No("not found"))),
    }
    Ok(k.take_outside(server, env.now_ms, what)?
        .map_err(NotTaken::No))
}

/// A session's call takes it and runs its next round now: what that says
/// goes to its stream.
async fn session(
    server: &Server,
    env: &Env,
    stores: &Stores<'_>,
    turn: Option<Turn>,
    call_id: &str,
    what: Outside,
) -> Result<Result<Vec<Effect>, NotTaken>, McpError> {
    let done =
        crate::session::take_outside(server, stores.session, env, turn, call_id, what).await?;
    Ok(match done {
        Ok(pushes) => Ok(pushes.into_iter().map(Effect::Push).collect()),
        Err(crate::session::Refused::Busy) => Err(NotTaken::Busy),
        Err(crate::session::Refused::Not(why)) => Err(NotTaken::No(why)),
    })
}
