//! One kept call as this object holds it, whichever keeper holds it (a
//! call shard's durable call, a session's call, a task): what an operation
//! on one call — an operator's cancel, pause, resume, purge, export or
//! look, a page's question — reads and writes. Each keeper's record is a
//! [`Kept`] (its own file here), and finds its own calls by admin id;
//! [`load`] is the one place here that tells the keepers apart. The machine ([`crate::kept`]) says
//! what an operation may do; a [`Kept`] only stores what it says.

use super::Stores;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::{Journal, Outside};
use crate::error::McpError;
use crate::kept::CallSummary;
use crate::kept::Status;
use crate::replay::PausedCall;
use crate::server::Server;

mod durable;
mod session;
mod task;

/// One kept call, loaded from its keeper's storage.
pub(crate) trait Kept {
    /// Where it is in its lifecycle.
    fn status(&self) -> Status;
    /// A tombstone: a purged call's end, kept for its tokens (unlisted,
    /// not found by any operation but a purge).
    fn tomb(&self) -> bool {
        false
    }
    /// Moves it to `status`, as the machine said (stored by
    /// [`Kept::store`]).
    fn set_status(&mut self, status: Status);
    /// Its journal.
    fn journal(&mut self) -> &mut Journal;
    /// Its journal, to read.
    fn journal_ref(&self) -> &Journal;
    /// The arguments it was called with.
    fn arguments(&self) -> serde_json::Value;
    /// The call as an operator's listing shows it.
    fn summary(&self) -> CallSummary;
    /// Stores it after its journal changed (`now_ms`), with what else must
    /// happen: a task's index hears; `wake`: a task's alarm runs it now.
    fn store(
        self: Box<Self>,
        server: &Server,
        now_ms: u64,
        wake: bool,
    ) -> Result<Vec<Effect>, McpError>;
    /// Something for it from outside its client's requests (an answer on
    /// its behalf, a rewind, a page's completion), taken into its journal
    /// and stored: `Err(why)` when it waits for no such thing.
    fn take_outside(
        self: Box<Self>,
        server: &Server,
        now_ms: u64,
        what: Outside,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError>;
    /// Cancels it (the machine allowed it): `Err(why)` when it finished
    /// meanwhile.
    fn cancel(
        self: Box<Self>,
        server: &Server,
        now_ms: u64,
        why: &str,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError>;
    /// Purges it (the machine said it leaves a tombstone): `Err(why)`
    /// when its keeper keeps no such thing.
    fn purge(self: Box<Self>) -> Result<Result<Vec<Effect>, &'static str>, McpError>;
    /// What the deploy check replays of it: a `tools/call` not finished.
    fn paused(self: Box<Self>) -> Result<Option<PausedCall>, McpError>;
    /// Where it is kept (what a page's id names).
    fn home(&self) -> Home;
}

/// The call kept at `home` in this object, if it is here.
pub(crate) fn load<'s>(
    stores: &'s Stores<'s>,
    home: &Home,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    Ok(match home {
        Home::Call(call_id) => durable::load(stores, call_id)?,
        Home::Session(_, call_id) => session::load(stores, |c| c.call_id == *call_id)?,
        Home::Task(_) => task::load(stores, |_| true)?,
    })
}

/// Finds the call an admin id names in one keeper's storage (`None`:
/// not one of its ids, or not kept here).
type ById = for<'s> fn(&'s Stores<'s>, &str) -> Result<Option<Box<dyn Kept + 's>>, McpError>;

/// Every keeper, asked in turn for an admin id (each knows its own ids).
const KEEPERS: [ById; 3] = [durable::by_id, session::by_id, task::by_id];

/// The call whose admin id is `id`, if this object keeps it.
pub(crate) fn by_id<'s>(
    stores: &'s Stores<'s>,
    id: &str,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    for keeper in KEEPERS {
        if let Some(k) = keeper(stores, id)? {
            return Ok(Some(k));
        }
    }
    Ok(None)
}
