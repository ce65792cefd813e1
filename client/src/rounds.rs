//! MRTR rounds on the 2026-07-28 wire, one at a time: a request answered
//! with `resultType: "input_required"` is retried, under a new id, with the
//! answers (`inputResponses`) and the `requestState` exactly as the server
//! gave it (none when it gave none). The rounds belong to their request: a
//! caller may send others in between, which carry nothing of them.

use serde_json::{json, Map, Value};

use crate::{Client, Error, Result};

/// How many rounds one call may take before the client gives up.
const MAX_ROUNDS: usize = 64;

/// What a server asks before it can answer a request
/// (`resultType: "input_required"`).
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// `inputRequests`: `{key: {method, params}}`.
    pub requests: Value,
    /// `requestState`, to send back unchanged; `None` when the server gave
    /// none (and then the retry must not carry one).
    pub state: Option<Value>,
}

/// What the retry of a request carries after an [`InputRequired`]: the
/// answers, and the state exactly as the server gave it. It belongs to
/// that one request: other requests in between carry nothing of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retry {
    /// `inputResponses`: `{key: result}`.
    pub responses: Map<String, Value>,
    /// `requestState`, if the server gave one.
    pub state: Option<Value>,
}

/// One round of a request on the 2026-07-28 wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// The result (a result without `resultType` is complete).
    Complete(Value),
    /// A task (`resultType: "task"`): the `CreateTaskResult`.
    Task(Value),
    /// The server needs answers first: retry with [`Client::answer_input`]'s.
    InputRequired(InputRequired),
}

/// `Mcp-Name` for a request: the tool or prompt name, the resource URI, or
/// the task id.
fn mirrored_name(method: &str, params: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        m if m.starts_with("tasks/") => "taskId",
        _ => return None,
    };
    params[field].as_str().map(str::to_string)
}

impl Client {
    /// Answers a map of input requests (`{key: {method, params}}`).
    pub(crate) fn answer_all(&mut self, requests: &Value) -> Map<String, Value> {
        let mut answers = Map::new();
        for (key, req) in requests.as_object().into_iter().flatten() {
            let method = req["method"].as_str().unwrap_or_default();
            let params = req.get("params").cloned().unwrap_or(json!({}));
            answers.insert(key.clone(), self.answer(method, &params));
        }
        answers
    }

    /// Answers what an [`InputRequired`] asks with the handler; the
    /// [`Retry`] to send it back with (its state unchanged).
    pub fn answer_input(&mut self, input: &InputRequired) -> Retry {
        Retry {
            responses: self.answer_all(&input.requests),
            state: input.state.clone(),
        }
    }

    /// One round of `method` on the 2026-07-28 wire: `params` plus, for a
    /// retry, the answers and state of `retry`. `Mcp-Name` is mirrored
    /// from the params (a tool or prompt name, a resource URI). A caller
    /// may send other requests between the rounds of one request.
    pub fn request_round(
        &mut self,
        method: &str,
        mut params: Value,
        retry: Option<&Retry>,
    ) -> Result<Round> {
        if let (Some(r), Some(p)) = (retry, params.as_object_mut()) {
            p.insert("inputResponses".into(), Value::Object(r.responses.clone()));
            if let Some(state) = &r.state {
                p.insert("requestState".into(), state.clone());
            }
        }
        let name = mirrored_name(method, &params);
        let result = self.modern_request(method, params, name.as_deref())?;
        Ok(match result["resultType"].as_str() {
            Some("input_required") => Round::InputRequired(InputRequired {
                requests: result.get("inputRequests").cloned().unwrap_or(json!({})),
                state: result.get("requestState").cloned(),
            }),
            Some("task") => Round::Task(result),
            _ => Round::Complete(result),
        })
    }

    /// One round of a `tools/call` of `name` (see [`Client::request_round`]).
    pub fn call_tool_round(
        &mut self,
        name: &str,
        arguments: Value,
        retry: Option<&Retry>,
    ) -> Result<Round> {
        let params = json!({"name": name, "arguments": arguments});
        self.request_round("tools/call", params, retry)
    }

    /// `method` on this wire through its rounds, answering with the handler;
    /// a task is returned as [`Round::Task`], never an input request.
    pub(crate) fn modern_rounds(&mut self, method: &str, params: Value) -> Result<Round> {
        let mut retry: Option<Retry> = None;
        for _ in 0..MAX_ROUNDS {
            match self.request_round(method, params.clone(), retry.as_ref())? {
                Round::InputRequired(input) => retry = Some(self.answer_input(&input)),
                done => return Ok(done),
            }
        }
        Err(Error::Protocol(format!(
            "{method} asked for input more than {MAX_ROUNDS} times"
        )))
    }
}
