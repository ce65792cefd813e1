//! A durable call in its shard, as one [`Kept`].

use serde_json::Value;

use super::super::Stores;
use super::Kept;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::{Journal, Outside, RoundEnd};
use crate::error::McpError;
use crate::kept::summary::{durable_id, kept_as, DURABLE_PREFIX};
use crate::kept::{CallSummary, Status};
use crate::replay::PausedCall;
use crate::server::Server;
use crate::store::StoredCall;

struct Durable<'s> {
    stores: &'s Stores<'s>,
    id: String,
    call: StoredCall,
}

/// The durable call `call_id`, if this shard keeps it (a tombstone too).
pub(super) fn load<'s>(
    stores: &'s Stores<'s>,
    call_id: &str,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    Ok(stores.call.load(call_id)?.map(|call| {
        Box::new(Durable {
            stores,
            id: call_id.to_string(),
            call,
        }) as Box<dyn Kept + 's>
    }))
}

/// The durable call an admin id `d.<call id>` names, if this shard keeps it.
pub(super) fn by_id<'s>(
    stores: &'s Stores<'s>,
    id: &str,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    match id.strip_prefix(DURABLE_PREFIX) {
        Some(call_id) => load(stores, call_id),
        None => Ok(None),
    }
}

impl Durable<'_> {
    /// Writes the row at `now_ms`.
    fn save(mut self, now_ms: u64) -> Result<Vec<Effect>, McpError> {
        self.call.updated_ms = now_ms;
        self.stores.call.save(&self.id, &self.call)?;
        Ok(Vec::new())
    }
}

impl Kept for Durable<'_> {
    fn status(&self) -> Status {
        self.call.status
    }

    fn tomb(&self) -> bool {
        self.call.tomb
    }

    fn set_status(&mut self, status: Status) {
        self.call.status = kept_as(status, &self.call.journal);
    }

    fn journal(&mut self) -> &mut Journal {
        &mut self.call.journal
    }

    fn journal_ref(&self) -> &Journal {
        &self.call.journal
    }

    fn arguments(&self) -> Value {
        self.call
            .journal
            .invocation
            .as_ref()
            .map_or(Value::Null, |i| i.arguments.clone())
    }

    fn summary(&self) -> CallSummary {
        self.call.summary(&self.id)
    }

    fn store(self: Box<Self>, _: &Server, now_ms: u64, _: bool) -> Result<Vec<Effect>, McpError> {
        // Its client's next retry runs it: nothing to wake.
        self.save(now_ms)
    }

    fn take_outside(
        mut self: Box<Self>,
        _: &Server,
        now_ms: u64,
        what: Outside,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        if let Err(why) = self.call.journal.take_outside(what, now_ms) {
            return Ok(Err(why));
        }
        // Its client's next retry runs it: it waits (or stays parked while
        // its journal says so).
        self.call.status = kept_as(Status::Waiting, &self.call.journal);
        self.save(now_ms).map(Ok)
    }

    fn cancel(
        mut self: Box<Self>,
        server: &Server,
        now_ms: u64,
        why: &str,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        // A round running at this moment (a claim is held only while one
        // awaits) finds this when it ends and stores nothing over it: its
        // client, and every retry, gets `-32800`.
        let owner = self.call.journal.trail.as_ref().map(|t| t.owner.clone());
        crate::server::round::let_go(server, &owner.unwrap_or_default(), &self.id);
        let call = &mut self.call;
        call.status = Status::Cancelled;
        call.last_reply = None;
        call.journal.pending.clear();
        call.journal
            .mark(now_ms, RoundEnd::Cancelled, Some(why), "");
        self.save(now_ms).map(Ok)
    }

    fn purge(self: Box<Self>) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        // Kept, unlisted, until no token can name it: a token still
        // naming it gets its end, never a rebuild.
        self.stores.call.save(&self.id, &self.call.tombstone())?;
        Ok(Ok(Vec::new()))
    }

    fn home(&self) -> Home {
        Home::Call(self.id.clone())
    }

    fn paused(self: Box<Self>) -> Result<Option<PausedCall>, McpError> {
        if self.call.status.is_final() || self.call.tomb {
            return Ok(None);
        }
        let admin = durable_id(&self.id);
        Ok(self
            .call
            .journal
            .invocation
            .clone()
            .map(|inv| PausedCall::new(admin, inv.tool, inv.arguments, self.call.journal)))
    }
}
