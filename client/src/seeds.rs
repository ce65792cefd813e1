//! The seed wires: the saga methods (seed 000: `tools/callSaga`, then
//! `tools/resumeSaga` with every completed step so far) and the streamless
//! sketch (seed 002: `dependent_requests` answered with
//! `dependent_responses`). Neither sends 2026 `_meta` or mirrored headers.

use serde_json::{json, Map, Value};

use crate::transport::rpc_error;
use crate::{Client, Error, Result};

/// How many rounds one call may take before the client gives up.
const MAX_ROUNDS: usize = 64;

impl Client {
    /// One plain JSON-RPC request; returns the whole response message.
    fn plain_message(
        &mut self,
        method: &str,
        params: Value,
        top: Map<String, Value>,
    ) -> Result<Value> {
        let id = self.id();
        let mut body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Some(b) = body.as_object_mut() {
            b.extend(top);
        }
        let reply = self.post(&[], &body)?;
        let m = reply
            .messages
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)) || m.get("error").is_some())
            .ok_or_else(|| Error::Protocol(format!("no answer to {method}")))?;
        match rpc_error(&m) {
            Some(e) => Err(e),
            None => Ok(m),
        }
    }

    /// One plain JSON-RPC request; returns its result.
    fn plain_request(&mut self, method: &str, params: Value) -> Result<Value> {
        Ok(self.plain_message(method, params, Map::new())?["result"].clone())
    }

    /// A saga call: answers each suspended round's steps and resumes with
    /// every step completed so far, until a plain `CallToolResult`.
    pub(crate) fn saga_call(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let mut result = self.plain_request(
            "tools/callSaga",
            json!({"name": name, "arguments": arguments}),
        )?;
        let mut completed: Vec<Value> = Vec::new();
        for _ in 0..MAX_ROUNDS {
            if result["state"] != "suspended" {
                return Ok(result);
            }
            for step in result["steps"].as_array().cloned().unwrap_or_default() {
                let method = match step["type"].as_str() {
                    Some("elicitation") => "elicitation/create",
                    Some("sampling") => "sampling/createMessage",
                    Some("roots") => "roots/list",
                    other => {
                        return Err(Error::Protocol(format!("unknown saga step type {other:?}")))
                    }
                };
                let answer = self.answer(method, &step["params"]);
                completed.push(json!({"stepId": step["stepId"], "result": answer}));
            }
            result = self.plain_request(
                "tools/resumeSaga",
                json!({"sagaToken": result["sagaToken"], "completedSteps": completed}),
            )?;
        }
        Err(Error::Protocol(format!(
            "{name} asked for input more than {MAX_ROUNDS} times"
        )))
    }

    /// A sketch call: opts in with `dependent_responses: {}`, answers the
    /// `dependent_requests`, retries with them and the `requestState`.
    pub(crate) fn sketch_call(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let params = json!({"name": name, "arguments": arguments});
        let mut top = Map::new();
        top.insert("dependent_responses".into(), json!({}));
        for _ in 0..MAX_ROUNDS {
            let m = self.plain_message("tools/call", params.clone(), top.clone())?;
            let Some(requests) = m.get("dependent_requests") else {
                return Ok(m["result"].clone());
            };
            let answers: Map<String, Value> = self
                .answer_all(requests)
                .into_iter()
                .map(|(k, v)| (k, json!({ "result": v })))
                .collect();
            top = Map::new();
            top.insert("dependent_responses".into(), Value::Object(answers));
            if let Some(state) = m.get("requestState") {
                top.insert("requestState".into(), state.clone());
            }
        }
        Err(Error::Protocol(format!(
            "{name} asked for input more than {MAX_ROUNDS} times"
        )))
    }
}
