//! The 2026-07-28 wire: `_meta` and the mirrored headers on every request
//! (`Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` from the tool's
//! `x-mcp-header` annotations), version negotiation (`-32022` → once more
//! in a version the server names), calls driven through their MRTR rounds
//! (`rounds.rs`), and tasks (poll `tasks/get`, answer with `tasks/update`).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::headers::param_headers;
use crate::rounds::Round;
use crate::transport::{header_value, rpc_error};
use crate::versions::STATELESS_VERSIONS;
use crate::{Client, Error, Result, TASKS};

/// `UnsupportedProtocolVersion`: its data names the versions the server
/// supports.
const UNSUPPORTED_VERSION: i64 = -32022;
/// `HeaderMismatch`: a mirrored header is missing or differs from the body.
const HEADER_MISMATCH: i64 = -32020;

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

/// A version this client speaks among those a `-32022` error names.
fn agreeable(e: &Error) -> Option<String> {
    let Error::Rpc {
        data: Some(data), ..
    } = e
    else {
        return None;
    };
    let supported = data["supported"].as_array()?;
    STATELESS_VERSIONS
        .iter()
        .find(|v| supported.iter().any(|s| s == **v))
        .map(|v| v.to_string())
}

/// The code of a JSON-RPC error.
fn code(e: &Error) -> Option<i64> {
    match e {
        Error::Rpc { code, .. } => Some(*code),
        _ => None,
    }
}

impl Client {
    /// The capabilities this client declares on a request.
    fn capabilities(&self) -> Value {
        let mut caps = json!({"elicitation": self.elicitation_caps(), "sampling": {}, "roots": {}});
        if self.tasks {
            caps["extensions"] = json!({ TASKS: {} });
        }
        caps
    }

    /// One 2026-07-28 request; returns its result. Notifications before it
    /// go to the handler. `name` is mirrored in `Mcp-Name`. A server that
    /// refuses the protocol version and names one this client speaks is
    /// asked again in it; a `tools/call` refused for its mirrored headers
    /// is made again, once, with the tool list fetched anew (its
    /// `x-mcp-header` annotations may have been unknown or changed).
    pub(crate) fn modern_request(
        &mut self,
        method: &str,
        params: Value,
        name: Option<&str>,
    ) -> Result<Value> {
        let params = self.with_meta(params);
        if method == "tools/call" {
            self.refuse_rejected(&params)?;
        }
        let (mut renegotiated, mut refreshed) = (false, false);
        loop {
            let err = match self.modern_once(method, params.clone(), name) {
                Ok(result) => return Ok(result),
                Err(e) => e,
            };
            if !renegotiated && code(&err) == Some(UNSUPPORTED_VERSION) {
                if let Some(v) = agreeable(&err) {
                    renegotiated = true;
                    self.settings.agreed = Some(v);
                    continue;
                }
            }
            if !refreshed && method == "tools/call" && code(&err) == Some(HEADER_MISMATCH) {
                refreshed = true;
                if self.list_tools().is_ok() {
                    continue;
                }
            }
            return Err(err);
        }
    }

    /// A `tools/call` of a tool `tools/list` left out is refused here: a
    /// client must not use a tool with invalid header annotations.
    fn refuse_rejected(&self, params: &Value) -> Result<()> {
        let tool = params["name"].as_str().unwrap_or_default();
        match self.settings.rejected.iter().find(|(n, _)| n == tool) {
            Some((_, why)) => Err(Error::Protocol(format!(
                "tool {tool:?} was left out of the tool list: {why}"
            ))),
            None => Ok(()),
        }
    }

    /// One POST of a 2026-07-28 request, with its `_meta` and headers.
    fn modern_once(
        &mut self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> Result<Value> {
        let version = self.protocol_version();
        if !params.is_object() {
            params = json!({});
        }
        if !params["_meta"].is_object() {
            params["_meta"] = json!({});
        }
        if let Some(meta) = params["_meta"].as_object_mut() {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(version),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                self.capabilities(),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".into(),
                self.settings.client_info.clone(),
            );
        }
        let mut headers: Vec<(String, String)> = vec![
            ("mcp-protocol-version".into(), version),
            ("mcp-method".into(), method.to_string()),
        ];
        if let Some(n) = name {
            headers.push(("mcp-name".into(), header_value(n)));
        }
        if method == "tools/call" {
            let mut listed = self.tools.iter().flatten();
            if let Some(tool) = listed.find(|t| t["name"] == params["name"]) {
                headers.extend(param_headers(&tool["inputSchema"], &params["arguments"]));
            }
        }
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers: Vec<(&str, String)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
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
        let params = json!({"name": name, "arguments": arguments});
        match self.modern_rounds("tools/call", params)? {
            Round::Task(created) => Ok(Started::Task(created)),
            Round::Complete(result) => Ok(Started::Done(result)),
            // Not returned: modern_rounds answers every input request.
            Round::InputRequired(_) => Err(Error::Protocol(format!("{name} still asks for input"))),
        }
    }

    /// Polls task `id` to its end, answering what it asks with
    /// `tasks/update`; returns its result.
    pub fn wait_task(&mut self, id: &str) -> Result<Value> {
        let task = self.modern_request("tasks/get", json!({ "taskId": id }), Some(id))?;
        self.run_task(&task)
    }

    /// Polls a task to its end, answering what it asks with `tasks/update`;
    /// returns its result.
    pub(crate) fn run_task(&mut self, created: &Value) -> Result<Value> {
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
