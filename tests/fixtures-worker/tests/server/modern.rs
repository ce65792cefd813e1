//! The 2026-07-28 wire: every error path, results, MRTR.

use serde_json::{json, Value};

use crate::{assert_error, set, Harness};
use durable_mcp::protocol::versions::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN};
use durable_mcp::token::KeyRing;

// ---- framing and transport errors ----

/// Malformed JSON is a parse error with HTTP 400 and a null id.
#[test]
fn malformed_json_is_400_parse_error() {
    let r = Harness::new().raw("POST", &[("content-type", "application/json")], "{oops");
    assert_error(&r, 400, -32700);
    assert_eq!(r.json["id"], Value::Null);
}

/// JSON that is not a JSON-RPC request is -32600 with HTTP 400.
#[test]
fn malformed_request_is_400_invalid_request() {
    let mut h = Harness::new();
    assert_error(
        &h.raw(
            "POST",
            &[],
            r#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#,
        ),
        400,
        -32600,
    );
    assert_error(
        &h.raw("POST", &[], r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#),
        400,
        -32600,
    );
}

/// GET and DELETE do not exist on the stateless wire.
#[test]
fn get_and_delete_are_405() {
    let mut h = Harness::new();
    for m in ["GET", "DELETE", "PUT"] {
        let r = h.raw(m, &[], "");
        assert_eq!(r.status, 405, "{m}");
        assert!(r.headers.iter().any(|(k, v)| k == "allow" && v == "POST"));
    }
}

/// A notification is accepted with 202 and no body.
#[test]
fn notifications_get_202() {
    let r = Harness::new().raw(
        "POST",
        &[],
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
    );
    assert_eq!(r.status, 202);
    assert_eq!(r.json, Value::Null);
}

/// A foreign Origin or Host is refused with 403 (DNS rebinding).
#[test]
fn foreign_origin_or_host_is_403() {
    let mut h = Harness::new();
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "origin", Some("http://evil.example"))
    });
    assert_error(&r, 403, -32600);
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "host", Some("evil.example:8787"))
    });
    assert_error(&r, 403, -32600);
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "origin", Some("http://localhost:5173"))
    });
    assert_eq!(r.status, 200);
}

/// A body over the limit is 413.
#[test]
fn oversized_body_is_413() {
    let mut h = Harness::with_config(|c| c.max_body_bytes = 64);
    let r = h.call("server/discover", json!({"pad": "x".repeat(100)}));
    assert_error(&r, 413, -32600);
}

/// With API tokens configured, no or a wrong bearer token is 401 with WWW-Authenticate.
#[test]
fn missing_bearer_token_is_401() {
    let mut h = Harness::with_config(|c| {
        c.sign_in = durable_mcp::auth::SignIn::ApiTokens(vec![("tok-alice".into(), "alice".into())])
    });
    let r = h.call("server/discover", json!({}));
    assert_error(&r, 401, -32600);
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| k == "www-authenticate" && v.starts_with("Bearer")));
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "authorization", Some("Bearer nope"))
    });
    assert_eq!(r.status, 401);
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "authorization", Some("Bearer tok-alice"))
    });
    assert_eq!(r.status, 200);
    assert_eq!(r.json["result"]["cacheScope"], "private");
}

/// A wrong Accept or Content-Type is refused before the body is read.
#[test]
fn wrong_accept_or_content_type_is_refused() {
    let mut h = Harness::new();
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "accept", Some("text/html"))
    });
    assert_eq!(r.status, 406);
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "content-type", Some("text/plain"))
    });
    assert_eq!(r.status, 415);
}

// ---- _meta and header rules ----

/// `_meta`, its protocol version and its client capabilities are required: -32602 / 400.
#[test]
fn missing_meta_fields_are_400_invalid_params() {
    let mut h = Harness::new();
    for meta in [
        Value::Null,
        json!({META_CLIENT_CAPABILITIES: {}}),
        json!({META_PROTOCOL_VERSION: MODERN}),
        json!({META_PROTOCOL_VERSION: MODERN, META_CLIENT_CAPABILITIES: "x"}),
    ] {
        let params = if meta.is_null() {
            json!({"_meta": null})
        } else {
            json!({"_meta": meta})
        };
        let r = h.call("server/discover", params);
        assert_error(&r, 400, -32602);
        assert_eq!(r.json["id"], 7, "errors echo the id");
    }
}

/// MCP-Protocol-Version must be present and equal `_meta`: -32020 / 400.
#[test]
fn protocol_version_header_must_match_meta() {
    let mut h = Harness::new();
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "mcp-protocol-version", Some("2025-11-25"))
    });
    assert_error(&r, 400, -32020);
    let r = h.request("server/discover", json!({}), |hs| {
        set(hs, "mcp-protocol-version", None)
    });
    assert_error(&r, 400, -32020);
}

/// An unknown version is -32022 with the supported list and the requested one.
#[test]
fn unsupported_version_is_400_with_supported_list() {
    let mut h = Harness::new();
    let params = json!({"_meta": {META_PROTOCOL_VERSION: "v999", META_CLIENT_CAPABILITIES: {}}});
    let r = h.request("server/discover", params, |hs| {
        set(hs, "mcp-protocol-version", Some("v999"))
    });
    assert_error(&r, 400, -32022);
    assert_eq!(
        r.json["error"]["data"],
        json!({"supported": [MODERN], "requested": "v999"})
    );
}

/// Mcp-Method and Mcp-Name must mirror the body; the base64 form is decoded.
#[test]
fn method_and_name_headers_must_mirror_the_body() {
    let mut h = Harness::new();
    let r = h.request("tools/list", json!({}), |hs| {
        set(hs, "mcp-method", Some("tools/call"))
    });
    assert_error(&r, 400, -32020);
    let r = h.request("tools/list", json!({}), |hs| set(hs, "mcp-method", None));
    assert_error(&r, 400, -32020);
    let args = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
    let r = h.request("tools/call", args.clone(), |hs| {
        set(hs, "mcp-name", Some("other"))
    });
    assert_error(&r, 400, -32020);
    let r = h.request("tools/call", args.clone(), |hs| set(hs, "mcp-name", None));
    assert_error(&r, 400, -32020);
    let r = h.request("tools/call", args.clone(), |hs| {
        set(hs, "mcp-name", Some("=?base64?YWRk?="))
    });
    assert_eq!(r.status, 200, "{}", r.json);
    let r = h.request("tools/call", args, |hs| {
        set(hs, "mcp-name", Some("=?base64?!!!?="))
    });
    assert_error(&r, 400, -32020);
}

/// Removed and unknown methods are 404 / -32601.
#[test]
fn removed_and_unknown_methods_are_404() {
    let mut h = Harness::new();
    for m in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "nope/x",
    ] {
        let r = h.call(m, json!({}));
        assert_error(&r, 404, -32601);
        assert_eq!(r.json["id"], 7);
    }
}

// ---- results ----

/// `server/discover` names versions, capabilities and the server.
#[test]
fn discover_describes_the_server() {
    let r = Harness::new().call("server/discover", json!({}));
    assert_eq!(r.status, 200);
    let res = &r.json["result"];
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["supportedVersions"], json!([MODERN]));
    assert!(res["capabilities"]["tools"].is_object());
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "durable-mcp"
    );
}

/// Lists carry resultType, ttlMs and cacheScope, and tools are sorted by name.
#[test]
fn lists_are_cacheable_and_ordered() {
    let mut h = Harness::new();
    for (m, key) in [
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let r = h.call(m, json!({}));
        assert_eq!(r.status, 200, "{m}");
        let res = &r.json["result"];
        assert_eq!(res["resultType"], "complete");
        assert!(res["ttlMs"].is_u64());
        assert_eq!(res["cacheScope"], "public");
        assert!(res[key].is_array(), "{m}");
    }
    let tools = h.call("tools/list", json!({})).json["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(names.contains(&"deploy"));
}

/// A plain tool call completes with structured content.
#[test]
fn tools_call_completes() {
    let r = Harness::new().call(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(r.json["result"]["resultType"], "complete");
    assert_eq!(r.json["result"]["structuredContent"], json!({"sum": 5.0}));
}

/// Bad tool arguments are a tool error the model can read, not a protocol error.
#[test]
fn bad_tool_arguments_are_an_error_result() {
    let r = Harness::new().call(
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x"}}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json["result"]["isError"], true);
}

/// An unknown tool is -32602; so is an unknown resource, with its uri (SEP-2164).
#[test]
fn unknown_tool_and_resource_are_errors() {
    let mut h = Harness::new();
    let r = h.call("tools/call", json!({"name": "nope"}));
    assert_eq!(r.json["error"]["code"], -32602);
    let r = h.call("resources/read", json!({"uri": "nope://x"}));
    assert_error(&r, 404, -32602);
    assert_eq!(r.json["error"]["data"]["uri"], "nope://x");
}

/// The seed-000 story over MRTR: elicit, sample, then complete.
#[test]
fn deploy_runs_over_mrtr_rounds() {
    let mut h = Harness::new();
    let args = json!({"service": "api"});
    let r1 = h.call("tools/call", json!({"name": "deploy", "arguments": args}));
    let res = &r1.json["result"];
    assert_eq!(res["resultType"], "input_required", "{}", r1.json);
    assert_eq!(
        res["inputRequests"]["target"]["method"],
        "elicitation/create"
    );
    let state = res["requestState"].as_str().expect("state").to_string();
    let r2 = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": args, "requestState": state,
               "inputResponses": {"target": {"action": "accept", "content": {"target": "staging"}}}}),
    );
    let res = &r2.json["result"];
    assert_eq!(
        res["inputRequests"]["safety"]["method"], "sampling/createMessage",
        "{}",
        r2.json
    );
    let state = res["requestState"].as_str().expect("state").to_string();
    let r3 = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": args, "requestState": state,
               "inputResponses": {"safety": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}}}),
    );
    let text = r3.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        text.starts_with("Deployed api to staging (ticket CHG-"),
        "{}",
        r3.json
    );
}

/// A tampered requestState is -32602 / 400; so is one for other arguments.
#[test]
fn tampered_or_rebound_state_is_refused() {
    let mut h = Harness::new();
    let r1 = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api"}}),
    );
    let state = r1.json["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string();
    let tampered = format!("{}A", state);
    let r = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api"}, "requestState": tampered}),
    );
    assert_error(&r, 400, -32602);
    let r = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "db"}, "requestState": state}),
    );
    assert_error(&r, 400, -32602);
    h.now_ms += 2 * 60 * 60 * 1000;
    let r = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api"}, "requestState": state}),
    );
    assert_error(&r, 400, -32602);
    assert!(r.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("expired"));
}

/// A deployment without state keys refuses stateful calls with a clear error.
#[test]
fn no_state_key_refuses_stateful_calls() {
    let mut h = Harness::with_config(|c| c.keys = KeyRing::default());
    let r = h.call(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api"}}),
    );
    assert_eq!(r.json["error"]["code"], -32603);
    assert!(r.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("no state key"));
    let r = h.call(
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
    );
    assert_eq!(r.status, 200, "stateless tools still work");
}

/// `subscriptions/listen` opens a held stream starting with the acknowledgement.
#[test]
fn listen_starts_with_an_acknowledgement() {
    let r = Harness::new().call(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.events[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        r.events[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

/// A checkpoint on the stateless wire is a state-only input_required round.
#[test]
fn a_checkpoint_is_a_state_only_round() {
    let mut h = Harness::new();
    let r = h.call(
        "tools/call",
        json!({"name": "test_reconnection", "arguments": {}}),
    );
    let res = &r.json["result"];
    assert_eq!(res["resultType"], "input_required");
    assert!(res.get("inputRequests").is_none(), "{res}");
    let state = res["requestState"].as_str().expect("state").to_string();
    let r = h.call(
        "tools/call",
        json!({"name": "test_reconnection", "arguments": {}, "requestState": state}),
    );
    assert_eq!(r.json["result"]["resultType"], "complete", "{}", r.json);
}

/// List changes reach the listen streams that asked for them, tagged with
/// their subscription id, and no others.
#[test]
fn list_changes_reach_the_listeners_that_asked() {
    let mut h = Harness::new();
    let discover = h.call("server/discover", json!({}));
    assert_eq!(
        discover.json["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    let r = h.call(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "bogus": true}}),
    );
    assert_eq!(
        r.events[0]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    h.call(
        "subscriptions/listen",
        json!({"notifications": {"promptsListChanged": true}}),
    );
    assert_eq!(h.listeners.len(), 2);
    let r = h.call(
        "tools/call",
        json!({"name": "test_trigger_tool_change", "arguments": {}}),
    );
    assert_eq!(r.json["result"]["content"][0]["text"], "Mutation triggered");
    assert_eq!(h.hub_frames.len(), 1, "{:?}", h.hub_frames);
    assert_eq!(
        h.hub_frames[0]["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        h.hub_frames[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    assert!(
        r.events.is_empty(),
        "the change is not sent on the call's own reply"
    );
}

/// A result that breaks its tool's outputSchema is a tool error: `add` of
/// two huge numbers overflows to infinity, which JSON can only write as null.
#[test]
fn a_result_that_breaks_the_output_schema_is_a_tool_error() {
    let mut h = Harness::new();
    let r = h.call_tool("add", json!({"a": 1e308, "b": 1e308}), json!({}));
    assert_eq!(r.status, 200, "{}", r.json);
    let res = &r.json["result"];
    assert_eq!(res["isError"], true, "{}", r.json);
    let text = res["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("does not match its outputSchema") && text.contains("$.sum is null"),
        "{text}"
    );
    assert!(res.get("structuredContent").is_none());
}

/// The smaller transport rules: the media type exactly, JSON-RPC errors on
/// every path, a session id that cannot name a session, the declared length.
#[test]
fn transport_edges_get_their_own_status_and_code() {
    let mut h = Harness::with_config(|c| c.max_body_bytes = 64);
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let r = h.raw("POST", &[("content-type", "application/jsonx")], ping);
    assert_error(&r, 415, -32600);
    let r = h.raw(
        "POST",
        &[("content-type", "application/json; charset=utf-8")],
        ping,
    );
    assert_ne!(r.status, 415, "parameters after the media type are fine");

    let other = durable_mcp::http::HttpRequest::post(
        "/other",
        &[
            ("host", "localhost:8787"),
            ("content-type", "application/json"),
        ],
        ping,
    );
    let r = h.send(other);
    assert_error(&r, 404, -32600);

    let r = h.raw(
        "POST",
        &[
            ("content-type", "application/json"),
            ("mcp-session-id", "not a session!"),
        ],
        ping,
    );
    assert_error(&r, 404, -32001);

    // Declared over the limit: refused before the body matters.
    let r = h.raw(
        "POST",
        &[
            ("content-type", "application/json"),
            ("content-length", "100000"),
        ],
        "{}",
    );
    assert_error(&r, 413, -32600);
}

/// One rule for wrong-shaped answers, on every wire: refused with -32602
/// naming the key, and the question stays open for a corrected answer.
#[test]
fn a_wrong_shaped_answer_is_refused_and_the_question_stays_open() {
    let mut h = Harness::new();
    let args = json!({"service": "api"});
    let r1 = h.call_tool("deploy", args.clone(), json!({}));
    let state = r1.json["result"]["requestState"].clone();
    let wrong = h.call_tool(
        "deploy",
        args.clone(),
        json!({"requestState": state, "inputResponses": {"target": {"action": "maybe"}}}),
    );
    assert_error(&wrong, 400, -32602);
    let message = wrong.json["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"target\"") && message.contains("elicitation/create"),
        "{message}"
    );
    let fixed = h.call_tool(
        "deploy",
        args,
        json!({"requestState": state, "inputResponses":
            {"target": {"action": "accept", "content": {"target": "staging"}}}}),
    );
    assert_eq!(
        fixed.json["result"]["resultType"], "input_required",
        "{}",
        fixed.json
    );
    assert!(fixed.json["result"]["inputRequests"]
        .get("safety")
        .is_some());
}

/// A chained call the server cannot stand behind is a tool error, not a
/// broken chain sent to the client: a tool it does not list, or arguments
/// the next tool's input schema refuses. A valid chain goes out as it is.
#[test]
fn a_chain_to_an_unlisted_tool_or_with_bad_arguments_is_a_tool_error() {
    use durable_mcp::{text, CallToolResult, Cx, Tool, ToolError};
    let mut h = Harness::new();
    for (name, next, args) in [
        ("chain_ok", "add", json!({"a": 1, "b": 2})),
        ("chain_unlisted", "no_such_tool", json!({})),
        ("chain_bad_args", "add", json!({"a": "one", "b": 2})),
    ] {
        h.server.registry.tool(Tool::new(
            name,
            async move |_: &mut Cx, _: Value| -> Result<CallToolResult, ToolError> {
                Ok(text("next").with_next_tool(next, args.clone()))
            },
        ));
    }
    let ok = h.call_tool("chain_ok", json!({}), json!({}));
    assert_eq!(
        ok.json["result"]["_meta"]["nextTool"],
        json!({"tool": "add", "arguments": {"a": 1, "b": 2}})
    );
    assert!(ok.json["result"].get("isError").is_none());

    let unlisted = h.call_tool("chain_unlisted", json!({}), json!({}));
    assert_eq!(
        unlisted.json["result"]["isError"], true,
        "{}",
        unlisted.json
    );
    let text = unlisted.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("does not list"), "{text}");
    assert!(unlisted.json["result"].get("_meta").is_none());

    let bad = h.call_tool("chain_bad_args", json!({}), json!({}));
    assert_eq!(bad.json["result"]["isError"], true, "{}", bad.json);
    let text = bad.json["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("input schema refuses") && text.contains("$.a"),
        "{text}"
    );
}

#[test]
fn a_custom_header_argument_must_mirror_the_body() {
    let mut s = Harness::new();
    let list = s.call("tools/list", json!({}));
    let tool = list.json["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "test_custom_header"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        tool["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let call = |s: &mut durable_mcp::testing::TestServer, header: Option<&str>| {
        s.request(
            "tools/call",
            json!({"name": "test_custom_header", "arguments": {"region": "Hello"}}),
            |h| set(h, "mcp-param-region", header),
        )
    };
    let ok = call(&mut s, Some("=?base64?SGVsbG8=?="));
    assert_eq!(ok.json["result"]["content"][0]["text"], "Region: Hello");
    assert_eq!(call(&mut s, Some("Hello")).status, 200);
    for bad in [
        None,
        Some("=?base64?SGVsbG8?="),
        Some("=?base64?SGVs!!!bG8=?="),
        Some("Bye"),
    ] {
        assert_error(&call(&mut s, bad), 400, -32020);
    }
}

/// With LISTEN_SHARDS, listen streams spread over several hub objects and a
/// change still reaches each of them exactly once.
#[test]
fn listen_streams_spread_over_hub_shards_and_each_hears_a_change_once() {
    let mut h = Harness::with_config(|c| c.listen_shards = 4);
    for _ in 0..8 {
        let r = h.call(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        assert_eq!(r.status, 200);
    }
    let hubs = h.objects.keys().filter(|n| n.starts_with("hub:")).count();
    assert!(
        hubs > 1,
        "streams spread over shards: {:?}",
        h.objects.keys()
    );
    h.call(
        "tools/call",
        json!({"name": "test_trigger_tool_change", "arguments": {}}),
    );
    assert_eq!(h.hub_frames.len(), 8, "{:?}", h.hub_frames);
}
