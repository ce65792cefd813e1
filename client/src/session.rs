//! 2025-11-25 sessions: `initialize` gives the `Mcp-Session-Id`; a call's
//! reply is an SSE stream carrying the server's requests, each answered
//! with a POST of a JSON-RPC response, as they arrive. When the server
//! closes the stream early (SEP-1699 polling), the client comes back with
//! `GET` + `Last-Event-ID` for the rest — or, with resumable requests on
//! (seed 001, [`Client::with_resumable_requests`]), with `requests/resume`
//! under the original request id and the `resumeToken` the server's
//! `notifications/requests/resumePolicy` gave. It waits the `retry:` the
//! stream last set before it reconnects (SEP-1699).
//!
//! A server may run without sessions (no `Mcp-Session-Id`): the client
//! then initializes once and sends the rest without one.

use std::io::BufReader;

use serde_json::{json, Value};

use crate::sse::{Event, Events};
use crate::transport::{read_reply, rpc_error};
use crate::versions::SESSION_VERSIONS;
use crate::{Client, Error, Result, SESSION};

/// How many times one request may pick its stream up again.
pub(crate) const MAX_RESUMES: usize = 256;
/// The longest a server's `retry:` makes the client wait to reconnect.
const MAX_RETRY_MS: u64 = 60_000;

/// Where a call's stream stands, to pick it up again: the last event id
/// and the reconnection delay it set (none: at once).
#[derive(Debug, Default)]
pub(crate) struct Position {
    last_event_id: Option<String>,
    retry_ms: u64,
}

impl Client {
    pub(crate) fn session_headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("mcp-protocol-version", self.protocol_version())];
        if let Some(id) = &self.session {
            h.push(("mcp-session-id", id.clone()));
        }
        h
    }

    fn session_capabilities(&self) -> Value {
        let mut caps = json!({"elicitation": self.elicitation_caps(), "sampling": {}, "roots": {}});
        if self.resumable {
            caps["resumableRequests"] = json!({});
        }
        caps
    }

    /// Opens the session on first use (again after [`Client::close`]), in
    /// the version the server's `initialize` answer chose.
    fn ensure_session(&mut self) -> Result<()> {
        if let Some((_, given)) = &self.settings.initialized {
            if *given == self.session {
                return Ok(());
            }
        }
        let id = self.id();
        let asked = self.settings.version.clone().unwrap_or(SESSION.into());
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": asked,
            "capabilities": self.session_capabilities(),
            "clientInfo": self.settings.client_info,
        }});
        let reply = self.post(&[], &init)?;
        if let Some(e) = reply.messages.iter().find_map(rpc_error) {
            return Err(e);
        }
        let result = reply
            .messages
            .iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .map(|m| m["result"].clone())
            .ok_or_else(|| Error::Protocol("no answer to initialize".into()))?;
        let chosen = result["protocolVersion"].as_str().unwrap_or_default();
        if !SESSION_VERSIONS.contains(&chosen) {
            return Err(Error::Protocol(format!(
                "the server chose protocol version {chosen:?}, which this client does not speak"
            )));
        }
        self.session = reply.session.clone();
        self.settings.initialized = Some((chosen.to_string(), reply.session));
        // A GET stream of an earlier session is not this one's.
        self.settings.inbox = None;
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&self.session_headers(), &done)?;
        Ok(())
    }

    /// One request in the session, answering the server's requests on its
    /// stream as they come; returns its result.
    pub(crate) fn session_request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.ensure_session()?;
        self.ensure_listening();
        let params = self.with_meta(params);
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
        if self.settings.listen {
            return self.listen_for(method, &id, resp);
        }
        let mut pos = Position::default();
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
                if let Some(result) = self.on_event(&id, &mut pos, event)? {
                    return Ok(result);
                }
            }
            resp = self.reconnect(method, &id, &pos)?;
        }
        Err(Error::Protocol(format!(
            "{method}: the stream was picked up {MAX_RESUMES} times without an answer"
        )))
    }

    /// One event of a call's stream: where the stream stands is noted in
    /// `pos`; a message is handled as [`Client::on_message`] does.
    pub(crate) fn on_event(
        &mut self,
        our_id: &Value,
        pos: &mut Position,
        event: Event,
    ) -> Result<Option<Value>> {
        if event.id.is_some() {
            pos.last_event_id = event.id;
        }
        if let Some(ms) = event.retry {
            pos.retry_ms = ms;
        }
        if event.data.is_empty() {
            return Ok(None); // a priming event
        }
        let m: Value = serde_json::from_str(&event.data)
            .map_err(|e| Error::Protocol(format!("an SSE event is not JSON: {e}")))?;
        self.on_message(our_id, m)
    }

    /// The stream of request `id` closed before its answer: picks it up
    /// again, with `requests/resume` when the server gave a resume token,
    /// else with `GET` + `Last-Event-ID` once the stream's `retry:` has
    /// passed.
    pub(crate) fn reconnect(
        &mut self,
        method: &str,
        id: &Value,
        pos: &Position,
    ) -> Result<ureq::Response> {
        if let (true, Some(token)) = (self.resumable, self.resume_token.take()) {
            let again = json!({"jsonrpc": "2.0", "id": id, "method": "requests/resume",
                               "params": {"resumeToken": token}});
            self.resume_token = Some(token);
            return self.send(&self.session_headers(), &again);
        }
        let Some(last) = &pos.last_event_id else {
            return Err(Error::Protocol(format!(
                "the stream of {method} ended without an answer"
            )));
        };
        std::thread::sleep(std::time::Duration::from_millis(
            pos.retry_ms.min(MAX_RETRY_MS),
        ));
        let mut get = self
            .agent
            .get(&self.url)
            .set("accept", "text/event-stream")
            .set("last-event-id", last);
        for (k, v) in self.session_headers() {
            get = get.set(k, &v);
        }
        if let Some(b) = self.bearer() {
            get = get.set("authorization", &b);
        }
        get.call().map_err(|e| Error::Transport(e.to_string()))
    }

    /// One message on a call's stream: our answer (returned), the server's
    /// request (answered at once), or a notification (to the handler).
    pub(crate) fn on_message(&mut self, our_id: &Value, m: Value) -> Result<Option<Value>> {
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
