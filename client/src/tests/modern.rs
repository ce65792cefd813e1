//! The 2026-07-28 wire against the test server: version negotiation, MRTR
//! rounds one at a time, mirrored headers, tools left out.

use serde_json::{json, Value};

use super::{result, serve, Accepting, Reply, Seen};
use crate::{Client, Error, Round, Wire, MODERN};

fn client(url: &str) -> Client {
    Client::new(url, Accepting::default()).with_wire(Wire::Modern)
}

fn meta_version(seen: &Seen) -> &Value {
    &seen.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
}

#[test]
fn a_refused_version_is_asked_again_in_one_the_server_names() {
    let (url, log) = serve(|seen, earlier| {
        if earlier.len() == 1 {
            let error = json!({"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2025-11-25", MODERN], "requested": "x"}});
            return Reply::json(
                400,
                json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": error}),
            );
        }
        result(
            seen,
            json!({"supportedVersions": [MODERN], "capabilities": {}}),
        )
    });
    let mut c = client(&url).with_protocol_version("2026-01-01");
    assert!(c.discover().is_ok());
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].headers["mcp-protocol-version"], "2026-01-01");
    assert_eq!(log[1].headers["mcp-protocol-version"], MODERN);
    assert_eq!(meta_version(&log[1]), MODERN);
    assert_ne!(log[0].body["id"], log[1].body["id"]);
    assert_eq!(c.protocol_version(), MODERN);
}

#[test]
fn a_refusal_naming_no_version_of_ours_is_the_error() {
    let (url, log) = serve(|seen, _| {
        let error = json!({"code": -32022, "message": "no", "data": {"supported": ["1999-01-01"]}});
        Reply::json(
            400,
            json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": error}),
        )
    });
    let err = client(&url).discover().err();
    assert!(
        matches!(err, Some(Error::Rpc { code: -32022, .. })),
        "{err:?}"
    );
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[test]
fn rounds_echo_the_state_and_stay_with_their_request() {
    let form = json!({"message": "ok?", "requestedSchema": {"type": "object",
        "properties": {"ok": {"type": "boolean", "default": true}}}});
    let (url, log) = serve(move |seen, _| {
        let p = &seen.body["params"];
        match (p["name"].as_str(), p.get("inputResponses")) {
            (Some("asks"), None) => result(
                seen,
                json!({"resultType": "input_required",
                "inputRequests": {"q": {"method": "elicitation/create", "params": form}},
                "requestState": "{\"opaque\": 1}"}),
            ),
            (Some("asks_no_state"), None) => result(
                seen,
                json!({"resultType": "input_required",
                "inputRequests": {"q": {"method": "elicitation/create", "params": form}}}),
            ),
            _ => result(seen, json!({"content": []})),
        }
    });
    let mut c = client(&url);
    let Ok(Round::InputRequired(input)) = c.call_tool_round("asks", json!({}), None) else {
        panic!("no input request");
    };
    let retry = c.answer_input(&input);
    // The form's default filled in what the handler left out.
    assert_eq!(retry.responses["q"]["content"], json!({"ok": true}));
    assert!(c.call_tool("other", json!({})).is_ok());
    let done = c.call_tool_round("asks", json!({}), Some(&retry));
    assert!(matches!(done, Ok(Round::Complete(_))), "{done:?}");
    assert!(c.call_tool("asks_no_state", json!({})).is_ok());
    let log = log.lock().unwrap();
    let bodies: Vec<&Value> = log.iter().map(|s| &s.body["params"]).collect();
    assert!(bodies[1].get("inputResponses").is_none() && bodies[1].get("requestState").is_none());
    assert_eq!(bodies[2]["requestState"], "{\"opaque\": 1}");
    assert_ne!(log[0].body["id"], log[2].body["id"]);
    assert!(bodies[4].get("inputResponses").is_some());
    assert!(bodies[4].get("requestState").is_none());
}

#[test]
fn annotated_arguments_are_mirrored_and_bad_tools_left_out() {
    let (url, log) = serve(|seen, _| match seen.body["method"].as_str() {
        Some("tools/list") => result(
            seen,
            json!({"tools": [
            {"name": "ok", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "v": {"type": "string", "x-mcp-header": "A B"}}}}]}),
        ),
        _ => result(seen, json!({"content": [], "contents": [], "messages": []})),
    });
    let mut c = client(&url);
    let tools = c.list_tools().unwrap_or_default();
    assert_eq!(tools.len(), 1);
    assert_eq!(c.rejected_tools()[0].0, "bad");
    assert!(c.call_tool("ok", json!({"region": "café", "n": 3})).is_ok());
    assert!(matches!(
        c.call_tool("bad", json!({"v": "x"})),
        Err(Error::Protocol(_))
    ));
    assert!(c.read_resource("file:///a%20b.txt").is_ok());
    assert!(c.get_prompt("greet", json!({})).is_ok());
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 4, "the refused tool was not called");
    let call = &log[1].headers;
    assert_eq!(call["mcp-method"], "tools/call");
    assert_eq!(call["mcp-name"], "ok");
    assert_eq!(call["mcp-param-region"], "=?base64?Y2Fmw6k=?=");
    assert_eq!(call["mcp-param-n"], "3");
    assert_eq!(log[2].headers["mcp-name"], "file:///a%20b.txt");
    assert_eq!(log[3].headers["mcp-name"], "greet");
}

#[test]
fn a_header_mismatch_fetches_the_tools_and_calls_again() {
    let (url, log) = serve(|seen, _| match seen.body["method"].as_str() {
        Some("tools/list") => result(
            seen,
            json!({"tools": [{"name": "t", "inputSchema":
            {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}}]}),
        ),
        _ if !seen.headers.contains_key("mcp-param-r") => {
            let error = json!({"code": -32020, "message": "Header mismatch"});
            Reply::json(
                400,
                json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": error}),
            )
        }
        _ => result(seen, json!({"content": []})),
    });
    assert!(client(&url).call_tool("t", json!({"r": "eu"})).is_ok());
    let log = log.lock().unwrap();
    let methods: Vec<&str> = log
        .iter()
        .filter_map(|s| s.body["method"].as_str())
        .collect();
    assert_eq!(methods, ["tools/call", "tools/list", "tools/call"]);
    assert_eq!(log[2].headers["mcp-param-r"], "eu");
}
