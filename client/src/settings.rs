//! The client's settings beyond the wire and the handler, with their
//! builder methods, and what it learned from the server: the protocol
//! version in use, whether the session is initialized, which tools it left
//! out. Kept in one field of [`Client`] so new settings do not touch its
//! constructor.

use serde_json::{json, Map, Value};

use crate::{Client, Wire, MODERN, SESSION};

/// Settings and learned state (see the module documentation).
pub(crate) struct Settings {
    /// The version to ask for first ([`Client::with_protocol_version`]).
    pub(crate) version: Option<String>,
    /// The stateless-wire version a server agreed to after refusing the
    /// first one (`-32022` with the versions it supports).
    pub(crate) agreed: Option<String>,
    /// The session's `initialize` outcome: the version the server chose
    /// and the `Mcp-Session-Id` it gave (none for a sessionless server).
    pub(crate) initialized: Option<(String, Option<String>)>,
    /// `_meta` entries sent on every request.
    pub(crate) meta: Map<String, Value>,
    /// `clientInfo` as sent.
    pub(crate) client_info: Value,
    /// Fill an accepted form's left-out fields with their defaults.
    pub(crate) elicitation_defaults: bool,
    /// Tools `tools/list` gave that were left out, with why.
    pub(crate) rejected: Vec<(String, String)>,
    /// Keep a session's `GET` stream open ([`Client::with_listen_stream`]).
    pub(crate) listen: bool,
    /// The streams read at once when `listen` is on.
    pub(crate) inbox: Option<crate::listen::Inbox>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            version: None,
            agreed: None,
            initialized: None,
            meta: Map::new(),
            client_info: json!({"name": "durable-mcp-client", "version": env!("CARGO_PKG_VERSION")}),
            elicitation_defaults: true,
            rejected: Vec::new(),
            listen: false,
            inbox: None,
        }
    }
}

impl Client {
    /// Asks for protocol `version` (default: 2026-07-28 on the stateless
    /// wire, 2025-11-25 in a session): in the `_meta` and
    /// `MCP-Protocol-Version` of each stateless request, or in
    /// `initialize`. A stateless server that refuses it (`-32022`, naming
    /// the versions it supports) is asked again, once, in one of
    /// [`STATELESS_VERSIONS`] it names; a session uses the version the
    /// server's `initialize` answer chose, if it is one of
    /// [`SESSION_VERSIONS`]. Pair it with [`Wire::for_version`].
    pub fn with_protocol_version(mut self, version: &str) -> Self {
        self.settings.version = Some(version.to_string());
        self
    }

    /// Adds `key: value` to the `_meta` of every request (a progress token,
    /// a trace id). The `io.modelcontextprotocol/*` entries the 2026-07-28
    /// wire requires are the client's own and win over these.
    pub fn with_request_meta(mut self, key: &str, value: Value) -> Self {
        self.settings.meta.insert(key.to_string(), value);
        self
    }

    /// The `clientInfo` sent (in `initialize`, and in each stateless
    /// request's `_meta`); default `durable-mcp-client` and this version.
    pub fn with_client_info(mut self, name: &str, version: &str) -> Self {
        self.settings.client_info = json!({"name": name, "version": version});
        self
    }

    /// Whether an accepted form answer is completed with the `default` of
    /// each field it leaves out (SEP-1034), before it is sent; default yes.
    pub fn with_elicitation_defaults(mut self, on: bool) -> Self {
        self.settings.elicitation_defaults = on;
        self
    }

    /// In a session, whether to keep a `GET` stream open beside each call
    /// (default no): a server may send requests there that belong to no
    /// call (an elicitation its tool makes outside the call's stream), and
    /// they are answered while the call waits. Each stream is then read on
    /// a thread of its own. A server without such a stream is not asked
    /// again in that session. The call itself is still sent from the
    /// caller's thread: a server that holds back the headers of its reply
    /// until the other request is answered is not met (its reply times out).
    pub fn with_listen_stream(mut self, on: bool) -> Self {
        self.settings.listen = on;
        self
    }

    /// The protocol version in use: agreed with the server, or else the
    /// one the client asks for on the wire in use.
    pub fn protocol_version(&self) -> String {
        if self.wire == Wire::Session {
            if let Some((v, _)) = &self.settings.initialized {
                return v.clone();
            }
            return self.settings.version.clone().unwrap_or(SESSION.into());
        }
        self.settings
            .agreed
            .clone()
            .or_else(|| self.settings.version.clone())
            .unwrap_or(MODERN.into())
    }

    /// The tools the last [`Client::list_tools`] left out, each with why
    /// (an invalid `x-mcp-header` annotation): a client must not call them.
    pub fn rejected_tools(&self) -> &[(String, String)] {
        &self.settings.rejected
    }

    /// An `elicitation/create` answered by the handler; an accepted form
    /// gets the defaults of the fields it left out (unless turned off).
    pub(crate) fn elicit(&mut self, params: &Value) -> Value {
        let mut answer = self.handler.elicit(params);
        let form = params.get("mode").is_none_or(|m| m == "form");
        let schema = &params["requestedSchema"];
        // `accept` makes the answer an object, so indexing it cannot panic.
        if self.settings.elicitation_defaults
            && form
            && answer["action"] == "accept"
            && has_defaults(schema)
        {
            crate::schema::apply_defaults(&mut answer["content"], schema);
        }
        answer
    }

    /// `params` with the `_meta` entries of [`Client::with_request_meta`]
    /// added under the caller's own.
    pub(crate) fn with_meta(&self, mut params: Value) -> Value {
        if self.settings.meta.is_empty() {
            return params;
        }
        if !params["_meta"].is_object() {
            params["_meta"] = json!({});
        }
        if let Some(meta) = params["_meta"].as_object_mut() {
            for (k, v) in &self.settings.meta {
                meta.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        params
    }

    /// Keeps the tools whose `x-mcp-header` annotations are valid (on the
    /// 2026-07-28 wire, where they mean headers); records the others.
    pub(crate) fn keep_valid_tools(&mut self, tools: Vec<Value>) -> Vec<Value> {
        self.settings.rejected.clear();
        if self.wire != Wire::Modern {
            return tools;
        }
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            match crate::headers::check_annotations(&tool["inputSchema"]) {
                Ok(()) => kept.push(tool),
                Err(why) => {
                    let name = tool["name"].as_str().unwrap_or_default().to_string();
                    self.settings.rejected.push((name, why));
                }
            }
        }
        kept
    }
}

/// Whether a form schema gives any field a default.
fn has_defaults(schema: &Value) -> bool {
    schema["properties"]
        .as_object()
        .is_some_and(|p| p.values().any(|f| f.get("default").is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nobody;
    impl crate::Handler for Nobody {
        fn elicit(&mut self, _: &Value) -> Value {
            json!({"action": "decline"})
        }
        fn sample(&mut self, _: &Value) -> Value {
            json!({})
        }
    }

    #[test]
    fn wires_follow_versions() {
        assert_eq!(Wire::for_version("2026-07-28"), Wire::Modern);
        assert_eq!(Wire::for_version("2025-11-25"), Wire::Session);
        assert_eq!(Wire::for_version("2025-06-18"), Wire::Session);
    }

    #[test]
    fn the_version_asked_for_depends_on_the_wire() {
        let c = Client::new("http://127.0.0.1:1/mcp", Nobody).with_wire(Wire::Session);
        assert_eq!(c.protocol_version(), SESSION);
        let c = Client::new("http://127.0.0.1:1/mcp", Nobody).with_wire(Wire::Modern);
        assert_eq!(c.protocol_version(), MODERN);
        let c = c.with_protocol_version("2026-01-01");
        assert_eq!(c.protocol_version(), "2026-01-01");
    }

    #[test]
    fn request_meta_is_added_under_the_callers() {
        let c = Client::new("http://127.0.0.1:1/mcp", Nobody)
            .with_request_meta("trace", json!("t1"))
            .with_request_meta("progressToken", json!(1));
        let p = c.with_meta(json!({"name": "x", "_meta": {"progressToken": 7}}));
        assert_eq!(p["_meta"], json!({"progressToken": 7, "trace": "t1"}));
        let p = c.with_meta(json!({}));
        assert_eq!(p["_meta"]["trace"], "t1");
    }

    #[test]
    fn tools_with_invalid_headers_are_left_out_on_the_stateless_wire() {
        let tools = vec![
            json!({"name": "ok", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}}),
            json!({"name": "bad", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": ""}}}}),
        ];
        let mut c = Client::new("http://127.0.0.1:1/mcp", Nobody).with_wire(Wire::Modern);
        let kept = c.keep_valid_tools(tools.clone());
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0]["name"], "ok");
        assert_eq!(c.rejected_tools()[0].0, "bad");
        let mut c = Client::new("http://127.0.0.1:1/mcp", Nobody).with_wire(Wire::Session);
        assert_eq!(c.keep_valid_tools(tools).len(), 2);
        assert!(c.rejected_tools().is_empty());
    }
}
