//! `tools/call` of a task tool. The Worker sent the request to a fresh
//! task object (the task id is its name). The body runs at once, on the
//! request: if it finishes, that is the answer and nothing is stored; if it
//! pauses, the task is stored here — before the answer, so `tasks/get`
//! already finds it — and the call is answered with `resultType: "task"`.
// Without the `limits` feature the metering here is left out of the build.
#![cfg_attr(
    not(any(feature = "limits", not(target_arch = "wasm32"))),
    allow(dead_code, unused_imports)
)]

use serde_json::{json, Value};

use super::slice::{settle, store, task_caps};
use super::{extension_required, task_fields, TaskHost, TaskRecord};
use crate::app::{TaskSupport, Tool};
use crate::engine::{ClientCaps, Journal, Outcome, Run, TaskMode};
use crate::error::McpError;
use crate::protocol::Request;
use crate::server::call::Round;
use crate::server::{input_responses, RoundInput, RoundOutcome, Server, Target};
use crate::server::{mrtr_call, mrtr_shape, run_round, state_param, Ctx, MethodReply, RequestMeta};

/// Serves `tools/call` of `tool`, which may run as a task.
pub(crate) async fn call(
    server: &Server,
    tool: &Tool,
    args: Value,
    request: &Request,
    meta: &RequestMeta,
    ctx: &Ctx<'_>,
) -> Result<MethodReply, McpError> {
    let caps = ClientCaps::from_json(Some(&meta.capabilities));
    if !caps.tasks {
        if tool.task == Some(TaskSupport::Required) {
            return Err(extension_required(&format!("The tool {:?}", tool.name)));
        }
        return mrtr_call(server, Target::Tool(tool), args, request, meta, ctx).await;
    }
    let Some(host) = ctx.task else {
        return Err(McpError::internal(
            "a task tool was called outside its task's Durable Object (routing bug)",
        ));
    };
    #[cfg(any(feature = "limits", not(target_arch = "wasm32")))]
    if let Some(refusal) = &ctx.limited {
        return held_back(
            server,
            host,
            new_task(host, tool, args, &caps, ctx),
            refusal,
        );
    }
    let round = first_round(server, tool, &args, request, meta, ctx).await?;
    let Some(run) = as_task(tool, &round)? else {
        return Ok(mrtr_shape(round));
    };
    // No read first: the task id is fresh randomness the router drew (the
    // header that carries it is internal, so a client cannot name it), so
    // this object holds nothing yet — and reading a table that does not
    // exist yet costs a failed statement.
    let task = new_task(host, tool, args, &caps, ctx);
    let (result, effects) = begin(server, host, task, run, ctx.env.now_ms)?;
    Ok(MethodReply {
        result,
        notifications: round.notifications,
        listen: None,
        effects,
    })
}

/// A new task a limit held back: kept `working`, saying why, its first
/// slice run when its meter admits it (its alarm asks, at the time the
/// refusal names).
fn held_back(
    server: &Server,
    host: &TaskHost<'_>,
    mut task: TaskRecord,
    refusal: &crate::limits::Refusal,
) -> Result<MethodReply, McpError> {
    super::limited::wait(&mut task, refusal);
    let now = task.created_ms;
    super::limited::listed(server, &task, now.saturating_add(server.config.task_ttl_ms));
    let effects = store(server, host, task.clone(), now)?;
    let mut result = task_fields(server, &task);
    result["resultType"] = json!("task");
    Ok(MethodReply {
        result,
        notifications: Vec::new(),
        listen: None,
        effects,
    })
}

/// The new `task` after its first slice (`run`), stored: what the call is
/// answered (the task, `resultType: "task"`) and the effects.
fn begin(
    server: &Server,
    host: &TaskHost<'_>,
    mut task: TaskRecord,
    run: Run<Value>,
    now: u64,
) -> Result<(Value, Vec<crate::effects::Effect>), McpError> {
    settle(server, &mut task, run, now);
    let effects = store(server, host, task.clone(), now)?;
    let mut result = task_fields(server, &task);
    result["resultType"] = json!("task");
    Ok((result, effects))
}

/// The first round as the task's first slice, when the call becomes a
/// task: it paused. A tool that takes its input first becomes a task
/// only at `detach` (or a sleep); until then its questions are MRTR
/// rounds (`None`, as for a round that completed).
fn as_task(tool: &Tool, round: &Round) -> Result<Option<Run<Value>>, McpError> {
    let RoundOutcome::InputRequired {
        requests, journal, ..
    } = &round.outcome
    else {
        return Ok(None);
    };
    if tool.input_before_task && !requests.values().any(|r| r.is_internal()) {
        return Ok(None);
    }
    let journal =
        (journal.clone()).ok_or_else(|| McpError::internal("a paused round lost its journal"))?;
    Ok(Some(Run {
        outcome: Outcome::InputRequired {
            requests: requests.clone(),
            journal,
        },
        notifications: Vec::new(),
        status: round.status.clone(),
    }))
}

/// The call's first round, as any 2026-07-28 call's (a task only if it
/// pauses).
async fn first_round(
    server: &Server,
    tool: &Tool,
    args: &Value,
    request: &Request,
    meta: &RequestMeta,
    ctx: &Ctx<'_>,
) -> Result<Round, McpError> {
    let (state, answers) = request.params.retry();
    run_round(
        server,
        RoundInput {
            method: &request.method,
            target: Target::Tool(tool),
            args: args.clone(),
            state: state_param(state)?,
            answers: input_responses(answers),
            caps: ClientCaps::from_json(Some(&meta.capabilities)),
            progress_token: meta.progress_token.clone(),
            log_level: meta.log_level.clone(),
            args_in_token: false,
            task_mode: TaskMode::Allowed,
            wire: "task",
            traceparent: crate::server::round::traceparent(request.meta.as_ref()),
        },
        ctx,
    )
    .await
}

/// A new task of `tool` in its object, as its first request made it.
fn new_task(
    host: &TaskHost<'_>,
    tool: &Tool,
    args: Value,
    caps: &ClientCaps,
    ctx: &Ctx<'_>,
) -> TaskRecord {
    let now = ctx.env.now_ms;
    TaskRecord {
        task_id: host.task_id.clone(),
        principal: ctx.principal.0.clone(),
        caller: ctx.caller.clone(),
        resource: ctx.resource.clone(),
        origin: ctx.origin(),
        tool: tool.name.clone(),
        arguments: args,
        caps: task_caps(caps),
        status: crate::kept::Status::Working,
        status_message: None,
        created_ms: now,
        updated_ms: now,
        journal: Journal::new(),
        timers: Default::default(),
        result: None,
        error: None,
        version: 0,
        limited: None,
        lease: None,
        listed: None,
    }
}
