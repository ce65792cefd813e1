//! The 2026-07-28 wire: `_meta` and the mirrored headers on every request,
//! MRTR rounds (`input_required` → retry with `inputResponses` and the
//! `requestState`), and tasks (poll `tasks/get`, answer with
//! `tasks/update`).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::transport::{header_value, rpc_error};
use crate::{Client, Error, Result, MODERN, TASKS};

/// How many rounds one call may take before the client gives up.
const MAX_ROUNDS: usize = 64;

/// How a call started with [`Client::start_tool`] was answered.
#[derive(Debug, Clone)]
pub enum Started {
    /// Its result (the call did not become a task).
    Done(Value),
    /// A task: the `CreateTaskResult` (its `taskId`, status, poll interval).
    Task(Value),
}

impl Started {
    /// The task id, for a task.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Started::Task(t) => t["taskId"].as_str(),
            Started::Done(_) => None,
        }
    }
}

impl Client {
    /// The capabilities this client declares on a request.
    fn capabilities(&self) -> Value {
        let mut caps = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});
        if self.tasks {
            caps["extensions"] = json!({ TASKS: {} });
        }
        caps
    }

    /// One 2026-07-28 request; returns its result. Notifications before it
    /// go to the handler. `name` is mirrored in `Mcp-Name`.
    pub(crate) fn modern_request(
        &mut self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> Result<Value> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities(),
            "io.modelcontextprotocol/clientInfo": {"name": "durable-mcp-client", "version": env!("CARGO_PKG_VERSION")},
        });
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![
            ("mcp-protocol-version", MODERN.to_string()),
            ("mcp-method", method.to_string()),
        ];
        if let Some(n) = name {
            headers.push(("mcp-name", header_value(n)));
        }
        let reply = self.post(&headers, &body)?;
        let mut result = None;
        for m in reply.messages {
            if m.get("id") == Some(&json!(id)) || m.get("error").is_some() {
                if let Some(e) = rpc_error(&m) {
                    return Err(e);
                }
                result = m.get("result").cloned();
            } else if m.get("method").is_some() {
                self.handler.notify(&m);
            }
        }
        result.ok_or_else(|| Error::Protocol(format!("no answer to {method}")))
    }

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

    /// A `tools/call` on this wire, to its end.
    pub(crate) fn modern_call(&mut self, name: &str, arguments: Value) -> Result<Value> {
        match self.start_tool(name, arguments)? {
            Started::Done(result) => Ok(result),
            Started::Task(created) => self.run_task(&created),
        }
    }

    /// Calls `name` on the 2026-07-28 wire through its MRTR rounds, but does
    /// not wait for a task: a call the server answers with a task returns
    /// [`Started::Task`], to [`Client::wait_task`] for or
    /// [`Client::cancel_task`].
    pub fn start_tool(&mut self, name: &str, arguments: Value) -> Result<Started> {
        let mut extra = Map::new();
        for _ in 0..MAX_ROUNDS {
            let mut params = json!({"name": name, "arguments": arguments});
            if let Some(p) = params.as_object_mut() {
                p.extend(extra.clone());
            }
            let result = self.modern_request("tools/call", params, Some(name))?;
            match result["resultType"].as_str() {
                Some("input_required") => {
                    let answers = self.answer_all(&result["inputRequests"]);
                    extra = Map::new();
                    extra.insert("inputResponses".into(), Value::Object(answers));
                    if let Some(state) = result.get("requestState") {
                        extra.insert("requestState".into(), state.clone());
                    }
                }
                Some("task") => return Ok(Started::Task(result)),
                _ => return Ok(Started::Done(result)),
            }
        }
        Err(Error::Protocol(format!(
            "{name} asked for input more than {MAX_ROUNDS} times"
        )))
    }

    /// Polls task `id` to its end, answering what it asks with
    /// `tasks/update`; returns its result.
    pub fn wait_task(&mut self, id: &str) -> Result<Value> {
        let task = self.modern_request("tasks/get", json!({ "taskId": id }), Some(id))?;
        self.run_task(&task)
    }

    /// Polls a task to its end, answering what it asks with `tasks/update`;
    /// returns its result.
    fn run_task(&mut self, created: &Value) -> Result<Value> {
        let id = created["taskId"]
            .as_str()
            .ok_or_else(|| Error::Protocol("a task without a taskId".into()))?
            .to_string();
        let mut answered = BTreeSet::new();
        let mut task = created.clone();
        loop {
            self.handler.notify(
                &json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": task}),
            );
            match task["status"].as_str().unwrap_or_default() {
                "completed" => {
                    return task
                        .get("result")
                        .cloned()
                        .ok_or_else(|| Error::Protocol("a completed task without a result".into()))
                }
                "failed" => {
                    let error = json!({"error": task.get("error").cloned().unwrap_or(json!({}))});
                    return Err(rpc_error(&error).unwrap_or(Error::Task("failed".into())));
                }
                "cancelled" => {
                    let why = task["statusMessage"].as_str().unwrap_or("cancelled");
                    return Err(Error::Task(format!("task {id} was cancelled: {why}")));
                }
                "input_required" => {
                    // Each key is asked once over a task's life: answer only new ones.
                    let mut fresh = Map::new();
                    for (k, v) in task["inputRequests"].as_object().into_iter().flatten() {
                        if !answered.contains(k) {
                            fresh.insert(k.clone(), v.clone());
                        }
                    }
                    if !fresh.is_empty() {
                        let answers = self.answer_all(&Value::Object(fresh));
                        answered.extend(answers.keys().cloned());
                        self.modern_request(
                            "tasks/update",
                            json!({"taskId": id, "inputResponses": answers}),
                            Some(&id),
                        )?;
                    }
                }
                _ => {}
            }
            let wait = task["pollIntervalMs"]
                .as_u64()
                .unwrap_or(500)
                .clamp(50, 10_000);
            std::thread::sleep(std::time::Duration::from_millis(wait));
            task = self.modern_request("tasks/get", json!({ "taskId": id }), Some(&id))?;
        }
    }

    /// Asks the server to cancel task `id` (`tasks/cancel`).
    pub fn cancel_task(&mut self, id: &str) -> Result<()> {
        self.modern_request("tasks/cancel", json!({ "taskId": id }), Some(id))
            .map(|_| ())
    }
}
