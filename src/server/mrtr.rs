//! The 2026-07-28 wire for paused calls (MRTR, SEP-2322): a round that needs
//! input answers `resultType: "input_required"` with `inputRequests` and a
//! sealed `requestState`; the retry repeats the request with
//! `inputResponses` and the state echoed.

use serde_json::{json, Map, Value};

use super::call::{input_responses, run_round, state_param, Round, RoundInput, RoundOutcome};
use super::request::{MethodReply, RequestMeta};
use super::target::Target;
use super::{Ctx, Server};
use crate::engine::{ClientCaps, TaskMode};
use crate::error::McpError;
use crate::protocol::{object, Request};

/// Runs one round of `target` for a modern request and shapes its reply.
pub(crate) async fn call(
    server: &Server,
    target: Target<'_>,
    args: Value,
    request: &Request,
    meta: &RequestMeta,
    ctx: &Ctx<'_>,
) -> Result<MethodReply, McpError> {
    let (state, answers) = request.params.retry();
    let state = state_param(state)?;
    let answers = input_responses(answers);
    let round = run_round(
        server,
        RoundInput {
            method: &request.method,
            target,
            args,
            state,
            answers,
            caps: ClientCaps::from_json(Some(&meta.capabilities)),
            progress_token: meta.progress_token.clone(),
            log_level: meta.log_level.clone(),
            args_in_token: false,
            task_mode: TaskMode::Off,
            wire: "mrtr",
            traceparent: super::round::traceparent(request.meta.as_ref()),
        },
        ctx,
    )
    .await?;
    Ok(shape(round))
}

/// The MRTR shape of a round: a complete result, or `input_required` with
/// the requests to answer and the sealed state.
pub(crate) fn shape(round: Round) -> MethodReply {
    let result = match round.outcome {
        RoundOutcome::Complete(mut v) => {
            v["resultType"] = json!("complete");
            v
        }
        RoundOutcome::InputRequired {
            requests, state, ..
        } => {
            // Inserted one by one: collecting into a map sorts first, one
            // more copy of the sort in the wasm for nothing (the requests
            // come in key order).
            let mut reqs = Map::new();
            for (k, r) in requests.into_iter().filter(|(_, r)| !r.is_internal()) {
                reqs.insert(k, r.into_modern_json());
            }
            // Only internal pauses: a state-only round (the client just retries).
            if reqs.is_empty() {
                object([
                    ("resultType", "input_required".into()),
                    ("requestState", Value::String(state)),
                ])
            } else {
                object([
                    ("resultType", "input_required".into()),
                    ("inputRequests", Value::Object(reqs)),
                    ("requestState", Value::String(state)),
                ])
            }
        }
    };
    MethodReply {
        result,
        notifications: round.notifications,
        listen: None,
        effects: Vec::new(),
    }
}
