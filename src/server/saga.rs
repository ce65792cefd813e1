//! Saga methods (seed 000): `tools/callSaga` starts a call, a suspended
//! round answers `{state: "suspended", sagaToken, steps}`, and
//! `tools/resumeSaga {sagaToken, completedSteps}` continues it until the
//! last answer, a plain `CallToolResult`.
//!
//! `completedSteps` carries every step so far; steps already in the journal
//! are ignored. A step with `error` reaches the tool as
//! [`ToolError::Client`](crate::engine::ToolError::Client).

use serde_json::Value;

use super::call::{result_or_error, run_round, Answers, RoundInput, RoundOutcome};
use super::target::Target;
use super::{Ctx, Server};
use crate::engine::{ClientCaps, InputRequest, TaskMode};
use crate::error::{ErrorKind, McpError};
use crate::protocol::{object, ClientRequest, Method, Request};
use crate::token;

/// The method saga state is bound to, for both saga methods.
const SAGA: Method = Method::ToolsCallSaga;

/// Serves `tools/callSaga` or `tools/resumeSaga`; the result object.
pub(crate) async fn handle(
    server: &Server,
    request: &Request,
    caps: ClientCaps,
    ctx: &Ctx<'_>,
) -> Result<Value, McpError> {
    let (tool, args, state, answers) = if request.kind == Some(SAGA) {
        let p = request.params.as_call()?;
        let name = p.name.as_str();
        let tool = server
            .registry
            .find_tool(name)
            .ok_or_else(|| McpError::invalid_params(format!("Unknown tool: {name}")))?;
        (
            tool,
            Value::Object(p.arguments.clone().unwrap_or_default()),
            None,
            Vec::new(),
        )
    } else {
        let p = match &request.params {
            ClientRequest::ResumeSaga(p) => p,
            other => return Err(other.unusable()),
        };
        let saga_token = p.saga_token.as_str();
        // The resume names only the token: read tool and arguments from it
        // (MAC-verified), then run_round checks the binding again.
        let claims = token::open_unbound(&server.config.keys, saga_token, ctx.env.now_ms)?;
        let malformed =
            || McpError::new(ErrorKind::InvalidState, "Invalid request state: malformed");
        if claims.method != SAGA.name() {
            return Err(McpError::new(
                ErrorKind::InvalidState,
                "Invalid request state: issued for another request",
            ));
        }
        let tool = server
            .registry
            .find_tool(&claims.target)
            .ok_or_else(|| crate::engine::tool_gone(&claims.target))?;
        let args = claims.arguments.clone().ok_or_else(malformed)?;
        (
            tool,
            args,
            Some(saga_token),
            completed_steps(p.completed_steps.as_ref())?,
        )
    };
    let round = run_round(
        server,
        RoundInput {
            method: SAGA.name(),
            target: Target::Tool(tool),
            args,
            state,
            answers,
            caps,
            progress_token: None,
            log_level: None,
            args_in_token: true,
            task_mode: TaskMode::Off,
            wire: "saga",
            traceparent: super::round::traceparent(request.meta.as_ref()),
        },
        ctx,
    )
    .await?;
    Ok(match round.outcome {
        RoundOutcome::Complete(v) => v,
        RoundOutcome::InputRequired {
            requests, state, ..
        } => {
            let steps: Vec<Value> = requests
                .iter()
                .filter(|(_, r)| !r.is_internal())
                .map(|(k, r)| step(k, r))
                .collect();
            object([
                ("state", "suspended".into()),
                ("sagaToken", Value::String(state)),
                ("steps", Value::Array(steps)),
            ])
        }
    })
}

/// `completedSteps: [{stepId, result | error}]` as answers.
fn completed_steps(steps: Option<&Value>) -> Result<Answers, McpError> {
    let bad = || {
        McpError::invalid_params(
            "Invalid params: completedSteps must be an array of {stepId, result | error}",
        )
    };
    let steps = match steps {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad()),
    };
    steps
        .iter()
        .map(|s| {
            let id = s.get("stepId").and_then(Value::as_str).ok_or_else(bad)?;
            Ok((id.to_string(), result_or_error(s).ok_or_else(bad)?))
        })
        .collect()
}

/// One saga step: `{type, stepId, params}`.
fn step(key: &str, r: &InputRequest) -> Value {
    let kind = match r.method.as_str() {
        "elicitation/create" => "elicitation",
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        other => other,
    };
    object([
        ("type", kind.into()),
        ("stepId", key.into()),
        ("params", r.params.clone()),
    ])
}
