//! A durable call's round on a deploy that does not serve its tool. The
//! call is still kept in its shard, and its row says what it is: a
//! finished call answers its end (an exact retry its result, a cancelled
//! one `-32800`), and a live one is parked — the machine's `Stop`, as a
//! session's call and a task are — so an operator lists it `parked`, and
//! the client is told `-32050` (kept as it was; a rollback continues it).

use serde_json::Value;

use super::call::{claim, digest_answers, input_responses, ClaimRow, Claimed, Durable};
use super::request::MethodReply;
use super::round::{self, Ended};
use super::{Ctx, Server};
use crate::engine::{digest_json, Invocation, RoundEnd};
use crate::error::McpError;
use crate::kept::{self, Event, Transition};
use crate::protocol::{ClientRequest, Request};
use crate::store::StoredCall;
use crate::token::{self, Binding};

/// What a retry of a durable call gets when its tool `gone` is not served.
pub(crate) fn durable_gone(
    server: &Server,
    request: &Request,
    ctx: &Ctx<'_>,
    gone: McpError,
) -> Result<MethodReply, McpError> {
    let (Some(d), ClientRequest::Call(p)) = (ctx.durable, &request.params) else {
        return Err(gone);
    };
    let Some(state) = super::call::state_param(p.request_state.as_ref())? else {
        return Err(gone);
    };
    let args = Value::Object(p.arguments.clone().unwrap_or_default());
    let claims = opened(server, (request, &p.name, &args), ctx, state)?;
    let answers = digest_answers(&input_responses(p.input_responses.as_ref()));
    let now = ctx.env.now_ms;
    let row = match claim(
        d,
        Some(&claims),
        &answers,
        now,
        server.config.claim_timeout_ms,
    )? {
        Claimed::Replay(round) => return Ok(super::mrtr::shape(round)),
        Claimed::Run(_, Some(ClaimRow::Whole(row))) => Some(*row),
        Claimed::Run(..) => d.store.load(&d.call_id)?,
    };
    let Some(mut row) = row else {
        return Err(gone);
    };
    row.journal.invocation.get_or_insert_with(|| Invocation {
        tool: p.name.clone(),
        arguments: args,
    });
    park(server, ctx, d, row, &gone)?;
    Err(gone)
}

/// The client's state, checked against this request as any round's is.
fn opened(
    server: &Server,
    (request, tool, args): (&Request, &str, &Value),
    ctx: &Ctx<'_>,
    state: &str,
) -> Result<crate::token::Claims, McpError> {
    let binding = Binding {
        method: &request.method,
        target: tool,
        args: &digest_json(args),
        sub: &ctx.principal.0,
    };
    token::open(&server.config.keys, state, ctx.env.now_ms, binding)
}

/// Parks a live call (a dead claim released, a lost row written again),
/// its trail marked once for each reason.
fn park(
    server: &Server,
    ctx: &Ctx<'_>,
    d: &Durable<'_>,
    mut row: StoredCall,
    gone: &McpError,
) -> Result<(), McpError> {
    // A claim it still had died with its isolate: the call waits.
    row.status = kept::summary::paused(&row.journal);
    row.claimed_at_ms = 0;
    row.updated_ms = ctx.env.now_ms;
    let parked = kept::summary::last_end(&row.journal)
        .is_some_and(|(end, why)| end == RoundEnd::Parked && why.as_deref() == Some(&gone.message));
    let stops = matches!(kept::transition(row.status, Event::Stop), Transition::To(_));
    if stops && !parked {
        mark_parked(server, ctx, d, &mut row.journal, gone);
    }
    row.status = kept::summary::paused(&row.journal);
    d.store.save(&d.call_id, &row)
}

/// Marks the call parked because its tool is gone: its trail and the
/// round log say so, as for any parked round.
fn mark_parked(
    server: &Server,
    ctx: &Ctx<'_>,
    d: &Durable<'_>,
    journal: &mut crate::engine::Journal,
    gone: &McpError,
) {
    let tool = journal
        .invocation
        .as_ref()
        .map(|i| i.tool.clone())
        .unwrap_or_default();
    let ended = Ended {
        call_id: &d.call_id,
        tool: &tool,
        wire: "mrtr",
        principal: &ctx.principal.0,
        now_ms: ctx.env.now_ms,
        round: 0,
        traceparent: None,
        error: Some((gone.code(), format!("{:?}", gone.kind))),
    };
    let why = gone.message.clone();
    round::record(server, Some(journal), RoundEnd::Parked, Some(&why), &ended);
}
