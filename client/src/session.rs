//! 2025-11-25 sessions: `initialize` gives the `Mcp-Session-Id`; a call's
//! reply is an SSE stream carrying the server's requests, each answered
//! with a POST of a JSON-RPC response, as they arrive. When the server
//! closes the stream early (SEP-1699 polling), the client comes back with
//! `GET` + `Last-Event-ID` for the rest — or, with resumable requests on
//! (seed 001, [`Client::with_resumable_requests`]), with `requests/resume`
//! under the original request id and the `resumeToken` the server's
//! `notifications/requests/resumePolicy` gave.

use std::io::BufReader;

use serde_json::{json, Value};

use crate::sse::Events;
use crate::transport::{read_reply, rpc_error};
use crate::{Client, Error, Result, SESSION};

/// How many times one request may pick its stream up again.
const MAX_RESUMES: usize = 256;

impl Client {
    fn session_headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("mcp-protocol-version", SESSION.to_string())];
        if let Some(id) = &self.session {
            h.push(("mcp-session-id", id.clone()));
        }
        h
    }

    fn session_capabilities(&self) -> Value {
        let mut caps = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});
        if self.resumable {
            caps["resumableRequests"] = json!({});
        }
        caps
    }

    /// Opens the session on first use.
    fn ensure_session(&mut self) -> Result<()> {
        if self.session.is_some() {
            return Ok(());
        }
        let id = self.id();
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": SESSION,
            "capabilities": self.session_capabilities(),
            "clientInfo": {"name": "durable-mcp-client", "version": env!("CARGO_PKG_VERSION")},
        }});
        let reply = self.post(&[], &init)?;
        if let Some(e) = reply.messages.iter().find_map(rpc_error) {
            return Err(e);
        }
        self.session = Some(
            reply
                .session
                .ok_or_else(|| Error::Protocol("initialize gave no Mcp-Session-Id".into()))?,
        );
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&self.session_headers(), &done)?;
        Ok(())
    }

    /// One request in the session, answering the server's requests on its
    /// stream as they come; returns its result.
    pub(crate) fn session_request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.ensure_session()?;
        let id = json!(self.id());
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut resp = self.send(&self.session_headers(), &body)?;
        if resp.status() >= 400 {
            let reply = read_reply(resp)?;
            return Err(reply
                .messages
                .iter()
                .find_map(rpc_error)
                .unwrap_or_else(|| Error::Protocol(format!("{method} failed"))));
        }
        let mut last_event_id: Option<String> = None;
        for _ in 0..MAX_RESUMES {
            if resp.content_type() != "text/event-stream" {
                let reply = read_reply(resp)?;
                let m = reply
                    .messages
                    .into_iter()
                    .next()
                    .ok_or_else(|| Error::Protocol(format!("no answer to {method}")))?;
                return match rpc_error(&m) {
                    Some(e) => Err(e),
                    None => Ok(m["result"].clone()),
                };
            }
            for event in Events::new(BufReader::new(resp.into_reader())) {
                let event = event.map_err(|e| Error::Transport(e.to_string()))?;
                if event.id.is_some() {
                    last_event_id = event.id.clone();
                }
                if event.data.is_empty() {
                    continue; // a priming event
                }
                let m: Value = serde_json::from_str(&event.data)
                    .map_err(|e| Error::Protocol(format!("an SSE event is not JSON: {e}")))?;
                if let Some(result) = self.on_message(&id, m)? {
                    return Ok(result);
                }
            }
            // The stream closed before the answer: pick it up again, with
            // requests/resume when the server gave a resume token.
            if let (true, Some(token)) = (self.resumable, self.resume_token.take()) {
                let again = json!({"jsonrpc": "2.0", "id": id, "method": "requests/resume",
                                   "params": {"resumeToken": token}});
                self.resume_token = Some(token);
                resp = self.send(&self.session_headers(), &again)?;
                continue;
            }
            let Some(last) = &last_event_id else {
                return Err(Error::Protocol(format!(
                    "the stream of {method} ended without an answer"
                )));
            };
            let mut get = self
                .agent
                .get(&self.url)
                .set("accept", "text/event-stream")
                .set("last-event-id", last);
            for (k, v) in self.session_headers() {
                get = get.set(k, &v);
            }
            resp = get.call().map_err(|e| Error::Transport(e.to_string()))?;
        }
        Err(Error::Protocol(format!(
            "{method}: the stream was picked up {MAX_RESUMES} times without an answer"
        )))
    }

    /// One message on a call's stream: our answer (returned), the server's
    /// request (answered at once), or a notification (to the handler).
    fn on_message(&mut self, our_id: &Value, m: Value) -> Result<Option<Value>> {
        if m.get("method").is_none() {
            if m.get("id") != Some(our_id) {
                return Ok(None);
            }
            return match rpc_error(&m) {
                Some(e) => Err(e),
                None => Ok(Some(m["result"].clone())),
            };
        }
        match m.get("id") {
            Some(request_id) => {
                let method = m["method"].as_str().unwrap_or_default().to_string();
                let params = m.get("params").cloned().unwrap_or(json!({}));
                let result = self.answer(&method, &params);
                let answer = json!({"jsonrpc": "2.0", "id": request_id, "result": result});
                self.post(&self.session_headers(), &answer)?;
            }
            None => {
                if m["method"] == "notifications/requests/resumePolicy"
                    && &m["params"]["requestId"] == our_id
                {
                    self.resume_token = m["params"]["resumeToken"].as_str().map(str::to_string);
                }
                self.handler.notify(&m)
            }
        }
        Ok(None)
    }

    /// A `tools/call` in the session, to its end.
    pub(crate) fn session_call(&mut self, name: &str, arguments: Value) -> Result<Value> {
        self.resume_token = None;
        self.session_request("tools/call", json!({"name": name, "arguments": arguments}))
    }
}
