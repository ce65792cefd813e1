//! Running a call through the replay engine on the 2026-07-28 wire (MRTR,
//! SEP-2322): `input_required` + `inputRequests` + a sealed `requestState`,
//! and retries carrying `inputResponses`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::modern::{Reply, RequestMeta};
use super::registry::{Prompt, Resource, ResourceTemplate, Tool};
use super::{Env, Principal, Server};
use crate::engine::{self, digest_json, ClientCaps, Cx, InputRequest, Journal, Outcome};
use crate::error::McpError;
use crate::protocol::Request;
use crate::token::{self, Binding, Claims};

/// What a call runs.
pub(crate) enum Target<'a> {
    Tool(&'a Tool),
    Prompt(&'a Prompt),
    Resource(&'a Resource),
    Template(&'a ResourceTemplate),
}

impl Target<'_> {
    /// The name state is bound to: tool/prompt name or resource URI.
    fn name(&self, args: &Value) -> String {
        match self {
            Target::Tool(t) => t.name.clone(),
            Target::Prompt(p) => p.name.clone(),
            Target::Resource(_) | Target::Template(_) => args["uri"].as_str().unwrap_or_default().to_string(),
        }
    }
}

/// Runs one round of `target` and shapes its reply.
pub(crate) async fn call(
    server: &Server,
    target: Target<'_>,
    args: Value,
    request: &Request,
    meta: &RequestMeta,
    principal: &Principal,
    env: &Env,
) -> Result<Reply, McpError> {
    let target_name = target.name(&args);
    let args_digest = digest_json(&args);
    let binding = Binding {
        method: &request.method,
        target: &target_name,
        args: &args_digest,
        sub: &principal.0,
    };
    let (journal, sid, offered) = resume(server, request, binding, env)?;

    let cx = Cx::new(journal, ClientCaps::from_json(Some(&meta.capabilities)))
        .with_offered(offered)
        .with_progress_token(meta.progress_token.clone())
        .with_log_level(meta.log_level.as_deref());

    let (outcome, notifications) = match target {
        Target::Tool(t) => {
            let run = engine::run(&*t.handler, cx, args).await;
            let outcome = match run.outcome {
                Outcome::Complete(r) => Outcome::Complete(r.to_json()),
                Outcome::ToolFailed(m) => Outcome::Complete(super::CallToolResult::error(m).to_json()),
                Outcome::InputRequired { requests, journal } => Outcome::InputRequired { requests, journal },
                Outcome::Error(e) => Outcome::Error(e),
            };
            (outcome, run.notifications)
        }
        Target::Prompt(p) => {
            let run = engine::run(&*p.handler, cx, args).await;
            (run.outcome, run.notifications)
        }
        Target::Resource(r) => {
            let run = engine::run(&*r.handler, cx, args).await;
            (map_contents(run.outcome), run.notifications)
        }
        Target::Template(t) => {
            let mut with_vars = t.match_uri(args["uri"].as_str().unwrap_or_default()).unwrap_or_default();
            with_vars.insert("uri".into(), args["uri"].clone());
            let run = engine::run(&*t.handler, cx, Value::Object(with_vars)).await;
            (map_contents(run.outcome), run.notifications)
        }
    };

    let result = match outcome {
        Outcome::Complete(mut v) => {
            v["resultType"] = json!("complete");
            v
        }
        Outcome::InputRequired { requests, journal } => {
            let state = seal(server, binding, sid, journal, env)?;
            input_required(&requests, &state)
        }
        // Prompts and resources have no error result: a failure is bad input.
        Outcome::ToolFailed(m) => return Err(McpError::invalid_params(m)),
        Outcome::Error(e) => return Err(e),
    };
    Ok(Reply {
        result,
        notifications,
        hold_open: false,
    })
}

fn map_contents(outcome: Outcome<Vec<Value>>) -> Outcome<Value> {
    match outcome {
        Outcome::Complete(contents) => Outcome::Complete(json!({ "contents": contents })),
        Outcome::InputRequired { requests, journal } => Outcome::InputRequired { requests, journal },
        Outcome::ToolFailed(m) => Outcome::ToolFailed(m),
        Outcome::Error(e) => Outcome::Error(e),
    }
}

/// The journal to replay with (new, or from a verified `requestState`) with
/// this request's `inputResponses` taken in: answers to pending requests go
/// into the journal, the rest are offered to the run.
fn resume(
    server: &Server,
    request: &Request,
    binding: Binding<'_>,
    env: &Env,
) -> Result<(Journal, String, Map<String, Value>), McpError> {
    let mut responses = match request.params.get("inputResponses") {
        Some(Value::Object(r)) => r.clone(),
        _ => Map::new(),
    };
    let Some(state) = request.params.get("requestState") else {
        return Ok((Journal::new(), new_call_id(env), responses));
    };
    let state = state
        .as_str()
        .ok_or_else(|| McpError::new(crate::error::ErrorKind::InvalidState, "Invalid request state: malformed"))?;
    let claims = token::open(&server.config.keys, state, env.now_ms, binding)?;
    let mut journal = claims
        .journal
        .ok_or_else(|| McpError::new(crate::error::ErrorKind::InvalidState, "Invalid request state: malformed"))?;
    let pending: Vec<String> = journal.pending.keys().cloned().collect();
    let answers = pending.into_iter().filter_map(|k| responses.remove(&k).map(|v| (k, Ok(v))));
    journal.accept_answers(answers.collect::<Vec<_>>());
    journal.round = claims.round;
    Ok((journal, claims.sid, responses))
}

/// Seals the journal for the next round.
fn seal(server: &Server, binding: Binding<'_>, sid: String, journal: Journal, env: &Env) -> Result<String, McpError> {
    let claims = Claims {
        kid: String::new(),
        method: binding.method.to_string(),
        target: binding.target.to_string(),
        args: binding.args.to_string(),
        sub: binding.sub.to_string(),
        iat: env.now_ms,
        exp: env.now_ms.saturating_add(server.config.state_ttl_ms),
        sid,
        round: journal.round + 1,
        journal: Some(journal),
        durable: false,
    };
    token::seal(&server.config.keys, claims)
}

/// The `input_required` result.
fn input_required(requests: &BTreeMap<String, InputRequest>, state: &str) -> Value {
    let reqs: Map<String, Value> = requests.iter().map(|(k, r)| (k.clone(), r.to_json())).collect();
    json!({"resultType": "input_required", "inputRequests": reqs, "requestState": state})
}

/// A fresh call id from the request's randomness.
pub(crate) fn new_call_id(env: &Env) -> String {
    env.random.iter().map(|b| format!("{b:02x}")).collect()
}
