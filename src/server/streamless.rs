//! The streamless sketch (seed 002): a `tools/call` that needs input is
//! answered, without a stream, by a response carrying top-level
//! `dependent_requests` instead of `result`; the client retries the same
//! call with top-level `dependent_responses: {key: {result} | {error}}`.
//!
//! Clients opt in by sending `dependent_responses` (`{}` on the first call)
//! or the header `Mcp-Dependent-Requests: 1`. The sketch's "cookie-ish
//! mechanism" for several rounds is a top-level `requestState` that the
//! incomplete response carries and the retry echoes.

use serde_json::{Map, Value};

use super::call::{result_or_error, run_round, state_param, Answers, RoundInput, RoundOutcome};
use super::target::Target;
use super::{Ctx, Server};
use crate::engine::{ClientCaps, TaskMode};
use crate::error::McpError;
use crate::http::HttpRequest;
use crate::protocol::params::State;
use crate::protocol::{object, result_response, Method, Request};

/// Whether this `tools/call` opted into the streamless wire.
pub(crate) fn opted_in(req: &HttpRequest, request: &Request) -> bool {
    request.kind == Some(Method::ToolsCall)
        && (request.raw.contains_key("dependent_responses")
            || req
                .header("mcp-dependent-requests")
                .is_some_and(|v| v.trim() == "1"))
}

/// Serves one streamless round; the whole JSON-RPC response message.
pub(crate) async fn handle(
    server: &Server,
    request: &Request,
    caps: ClientCaps,
    ctx: &Ctx<'_>,
) -> Result<Value, McpError> {
    let p = request.params.as_call()?;
    let name = p.name.as_str();
    // The sketch's state is top-level; a `params.requestState` counts too.
    let paused = match request.raw.get("requestState") {
        Some(v) => State::read(v),
        None => p.request_state.clone(),
    };
    let tool = server
        .registry
        .find_tool(name)
        .ok_or_else(|| match paused {
            // A paused call of a tool this deploy does not serve: kept.
            Some(_) => crate::engine::tool_gone(name),
            None => McpError::invalid_params(format!("Unknown tool: {name}")),
        })?;
    let state = state_param(paused.as_ref())?;
    let answers = dependent_responses(&request.raw)?;
    let round = run_round(
        server,
        RoundInput {
            method: Method::ToolsCall.name(),
            target: Target::Tool(tool),
            args: Value::Object(p.arguments.clone().unwrap_or_default()),
            state,
            answers,
            caps,
            progress_token: None,
            log_level: None,
            args_in_token: false,
            task_mode: TaskMode::Off,
            wire: "sketch",
            traceparent: super::round::traceparent(request.meta.as_ref()),
        },
        ctx,
    )
    .await?;
    Ok(match round.outcome {
        RoundOutcome::Complete(v) => result_response(&request.id, v),
        RoundOutcome::InputRequired {
            requests, state, ..
        } => {
            let deps: Map<String, Value> = requests
                .into_iter()
                .filter(|(_, r)| !r.is_internal())
                .map(|(k, r)| (k, r.into_json()))
                .collect();
            object([
                ("jsonrpc", "2.0".into()),
                ("id", request.id.clone()),
                ("dependent_requests", Value::Object(deps)),
                ("requestState", Value::String(state)),
            ])
        }
    })
}

fn dependent_responses(raw: &Map<String, Value>) -> Result<Answers, McpError> {
    let bad = || {
        McpError::invalid_params(
            "Invalid params: dependent_responses must map keys to {result} or {error}",
        )
    };
    let map = match raw.get("dependent_responses") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad()),
    };
    map.iter()
        .map(|(k, v)| Ok((k.clone(), result_or_error(v).ok_or_else(bad)?)))
        .collect()
}
