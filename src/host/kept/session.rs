//! A session's call, as one [`Kept`].

use serde_json::Value;

use super::super::Stores;
use super::Kept;
use crate::effects::Effect;
use crate::elicitation::Home;
use crate::engine::{Journal, Outside, RoundEnd};
use crate::error::McpError;
use crate::kept::summary::{session_call_id, SESSION_PREFIX};
use crate::kept::{CallSummary, Status};
use crate::replay::PausedCall;
use crate::server::Server;
use crate::session::{SessionCall, SessionMeta};

struct Session<'s> {
    stores: &'s Stores<'s>,
    meta: SessionMeta,
    call: SessionCall,
}

/// The session's call `which` picks, if this object keeps it.
pub(super) fn load<'s>(
    stores: &'s Stores<'s>,
    which: impl Fn(&SessionCall) -> bool,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    let Some(meta) = stores.session.meta()? else {
        return Ok(None);
    };
    let call = stores.session.calls()?.into_iter().find(which);
    Ok(call.map(|call| Box::new(Session { stores, meta, call }) as Box<dyn Kept + 's>))
}

/// The session's call an admin id `s.<h>.<call>` names, if this object
/// keeps it.
pub(super) fn by_id<'s>(
    stores: &'s Stores<'s>,
    id: &str,
) -> Result<Option<Box<dyn Kept + 's>>, McpError> {
    if !id.starts_with(SESSION_PREFIX) {
        return Ok(None);
    }
    let Some(meta) = stores.session.meta()? else {
        return Ok(None);
    };
    let call = stores
        .session
        .calls()?
        .into_iter()
        .find(|c| session_call_id(&meta.id, c.admin_key()) == id);
    Ok(call.map(|call| Box::new(Session { stores, meta, call }) as Box<dyn Kept + 's>))
}

impl Kept for Session<'_> {
    fn status(&self) -> Status {
        self.call.summary(&self.meta).status
    }

    fn set_status(&mut self, status: Status) {
        self.call.state = crate::kept::summary::kept_as(status, &self.call.journal);
    }

    fn journal(&mut self) -> &mut Journal {
        &mut self.call.journal
    }

    fn journal_ref(&self) -> &Journal {
        &self.call.journal
    }

    fn arguments(&self) -> Value {
        self.call
            .params
            .get("arguments")
            .cloned()
            .unwrap_or(Value::Null)
    }

    fn summary(&self) -> CallSummary {
        self.call.summary(&self.meta)
    }

    fn store(self: Box<Self>, _: &Server, _: u64, _: bool) -> Result<Vec<Effect>, McpError> {
        // Its client's next request runs it: nothing to wake.
        self.stores.session.put_call(&self.call)?;
        Ok(Vec::new())
    }

    fn take_outside(
        self: Box<Self>,
        _: &Server,
        _: u64,
        _: Outside,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        // A session's call runs its next round as it takes it, and that
        // round waits: `host/outside.rs` gives it to the session's own
        // (asynchronous) path, never here.
        Ok(Err("a session's call takes it in its round"))
    }

    fn cancel(
        mut self: Box<Self>,
        server: &Server,
        now_ms: u64,
        why: &str,
    ) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        let owner = self.call.journal.trail.as_ref().map(|t| t.owner.clone());
        crate::server::round::let_go(server, &owner.unwrap_or_default(), &self.call.call_id);
        let call = &mut self.call;
        call.state = Status::Cancelled;
        call.journal
            .mark(now_ms, RoundEnd::Cancelled, Some(why), "");
        call.journal = Journal {
            round: call.journal.round,
            trail: call.journal.trail.take(),
            ..Journal::new()
        };
        self.stores.session.put_call(call)?;
        // The request gets its answer on its stream: whoever reads it now
        // or resumes it later learns it was cancelled, and by whom.
        let cancelled = crate::server::cancelled_by_operator();
        let message = cancelled.to_response(Some(&call.request_id));
        if call.stream.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        let push = crate::session::logged_push(self.stores.session, &call.stream, &message)?;
        Ok(Ok(vec![Effect::Push(push)]))
    }

    fn purge(self: Box<Self>) -> Result<Result<Vec<Effect>, &'static str>, McpError> {
        Ok(Err("a session's calls go with the session (its idle TTL)"))
    }

    fn home(&self) -> Home {
        Home::Session(self.meta.id.clone(), self.call.call_id.clone())
    }

    fn paused(self: Box<Self>) -> Result<Option<PausedCall>, McpError> {
        let status = self.status();
        let call = self.call;
        if status.is_final() || call.method != crate::protocol::Method::ToolsCall.name() {
            return Ok(None);
        }
        let admin = session_call_id(&self.meta.id, call.admin_key());
        let arguments = call.params["arguments"].clone();
        Ok(Some(PausedCall::new(
            admin,
            call.target().to_string(),
            arguments,
            call.journal,
        )))
    }
}
