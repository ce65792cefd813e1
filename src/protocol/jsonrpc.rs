//! JSON-RPC 2.0 messages: parsing one incoming message and building replies.

use serde_json::{Map, Value};

use super::method::Method;
use super::params::ClientRequest;
use crate::error::{ErrorKind, McpError};

/// One incoming JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: it has an `id` and expects a response.
    Request(Request),
    /// A notification: no `id`, no response.
    Notification(Notification),
    /// A response from the client to a request the server sent.
    Response(Response),
}

/// A JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id, a string or an integer.
    pub id: Value,
    /// The method name.
    pub method: String,
    /// The method, read once as the message is parsed; `None` for a
    /// method this server does not know.
    pub kind: Option<Method>,
    /// `params._meta` as sent, moved out of the params (`None`: absent).
    pub meta: Option<Value>,
    /// The params, typed by the method (read once, here).
    pub params: ClientRequest,
    /// The message's other top-level members (`params` moved out), for
    /// wires that read top-level extras (the streamless sketch's
    /// `dependent_responses`).
    pub raw: Map<String, Value>,
}

impl Request {
    /// The params of a call (`tools/call`, `prompts/get`,
    /// `resources/read`) as a JSON object again, `_meta` back in: what a
    /// session keeps of the call it runs.
    pub fn call_params(&self) -> Value {
        let mut out = match &self.params {
            ClientRequest::Call(p) => match serde_json::to_value(p) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            },
            ClientRequest::Read(p) => {
                Map::from_iter([("uri".to_string(), Value::String(p.uri.clone()))])
            }
            _ => Map::new(),
        };
        if let Some(meta) = &self.meta {
            out.insert("_meta".into(), meta.clone());
        }
        Value::Object(out)
    }
}

/// A JSON-RPC notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object (empty when absent).
    pub params: Map<String, Value>,
}

/// A JSON-RPC response sent by the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the server request it answers.
    pub id: Value,
    /// `Ok(result)` or `Err(error object)`.
    pub outcome: Result<Value, Value>,
}

/// Parses one message from a request body. Batches (arrays) are not part of
/// MCP since 2025-06-18 and are refused as invalid requests.
pub fn parse_message(body: &[u8]) -> Result<Message, (McpError, Option<Value>)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            McpError::new(ErrorKind::Parse, format!("Parse error: {e}")),
            None,
        )
    })?;
    parse_value(value)
}

/// Validates a parsed JSON value as one JSON-RPC message.
pub fn parse_value(value: Value) -> Result<Message, (McpError, Option<Value>)> {
    let Value::Object(mut obj) = value else {
        let what = if value.is_array() {
            "batches are not supported"
        } else {
            "not an object"
        };
        return Err((
            McpError::invalid_request(format!("Invalid Request: {what}")),
            None,
        ));
    };
    // Echo the id in errors when it is usable.
    let id = obj
        .get("id")
        .filter(|v| v.is_string() || v.is_i64() || v.is_u64())
        .cloned();
    let bad = |msg: &str| {
        Err((
            McpError::invalid_request(format!("Invalid Request: {msg}")),
            id.clone(),
        ))
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return bad("jsonrpc must be \"2.0\"");
    }
    if let Some(raw_id) = obj.get("id") {
        if !(raw_id.is_string() || raw_id.is_i64() || raw_id.is_u64()) {
            return bad("id must be a string or an integer");
        }
    }
    // Moved out, not copied: the params are most of a message.
    let mut params = match obj.remove("params") {
        None => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return bad("params must be an object"),
    };
    match (obj.get("method"), obj.get("id")) {
        (Some(Value::String(method)), Some(id)) => {
            let kind = Method::parse(method);
            Ok(Message::Request(Request {
                id: id.clone(),
                kind,
                method: method.clone(),
                meta: params.remove("_meta"),
                params: ClientRequest::read(kind, params),
                raw: obj,
            }))
        }
        (Some(Value::String(method)), None) => Ok(Message::Notification(Notification {
            method: method.clone(),
            params,
        })),
        (Some(_), _) => bad("method must be a string"),
        (None, Some(id)) => {
            let outcome = match (obj.get("result"), obj.get("error")) {
                (Some(r), None) => Ok(r.clone()),
                (None, Some(e)) if e.is_object() => Err(e.clone()),
                _ => return bad("a response needs exactly one of result or error"),
            };
            Ok(Message::Response(Response {
                id: id.clone(),
                outcome,
            }))
        }
        (None, None) => bad("missing method"),
    }
}

/// A JSON object of `entries`, moved in. `json!` serializes every value it
/// interpolates into a new one: for a form's schema or a state token, a deep
/// copy per round (three percent of an MRTR round's first request).
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    // Inserted one by one, not collected: a map collected from an iterator
    // is sorted first, and that sort was built once per `N` (a few KB of
    // wasm each). A later key replaces an earlier one, as collecting does.
    let mut map = Map::new();
    for (k, v) in entries {
        map.insert(k.to_string(), v);
    }
    Value::Object(map)
}

/// A success response.
pub fn result_response(id: &Value, result: Value) -> Value {
    object([
        ("jsonrpc", "2.0".into()),
        ("id", id.clone()),
        ("result", result),
    ])
}

/// A success response as JSON bytes: the same message as
/// [`result_response`], written straight out rather than built as a map
/// and then serialized (the reply to most requests takes this path).
pub fn result_bytes(id: &Value, result: &Value) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Envelope<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: &'a Value,
    }
    serde_json::to_vec(&Envelope {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_default()
}

/// A notification message.
pub fn notification(method: &str, params: Value) -> Value {
    object([
        ("jsonrpc", "2.0".into()),
        ("method", method.into()),
        ("params", params),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(body: &str) -> (ErrorKind, Option<Value>) {
        let (e, id) = parse_message(body.as_bytes()).expect_err("should fail");
        (e.kind, id)
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Ok(Message::Request(r)) if r.method == "tools/list" && r.id == 1
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response(r)) if r.outcome.is_ok()
        ));
    }

    #[test]
    fn result_bytes_is_the_result_response() {
        let result = json!({"content": [{"type": "text", "text": "3"}], "resultType": "complete"});
        for id in [json!(7), json!("a")] {
            let bytes = result_bytes(&id, &result);
            let parsed: Value = serde_json::from_slice(&bytes).expect("valid JSON");
            assert_eq!(parsed, result_response(&id, result.clone()));
        }
    }

    #[test]
    fn malformed_json_is_a_parse_error() {
        assert_eq!(kind("{not json").0, ErrorKind::Parse);
        assert_eq!(kind("").0, ErrorKind::Parse);
    }

    #[test]
    fn malformed_requests_are_invalid_and_echo_a_usable_id() {
        assert_eq!(kind("[]").0, ErrorKind::InvalidRequest);
        assert_eq!(kind("42").0, ErrorKind::InvalidRequest);
        assert_eq!(
            kind(r#"{"id":1,"method":"x"}"#),
            (ErrorKind::InvalidRequest, Some(json!(1)))
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            (ErrorKind::InvalidRequest, None)
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":2,"method":7}"#).0,
            ErrorKind::InvalidRequest
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#).0,
            ErrorKind::InvalidRequest
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":3}"#).0,
            ErrorKind::InvalidRequest
        );
    }

    #[test]
    fn an_object_is_what_json_would_build() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        assert_eq!(
            object([("mode", "form".into()), ("requestedSchema", schema.clone())]),
            json!({"mode": "form", "requestedSchema": schema}),
        );
        assert_eq!(object([]), json!({}));
    }
}
