//! Property-based fuzzing of every decoder that reads what a client sends:
//! JSON-RPC messages, sealed state tokens, `=?base64?…?=` header values,
//! SSE `Last-Event-ID`s, and whole requests through the test server. The
//! property is the same everywhere: arbitrary input gets an answer (a value
//! or an error), never a panic, and never a 5xx.
//!
//! Bounded: each property runs a fixed number of cases (proptest's
//! default of 256, 64 for whole requests).

use durable_mcp::http::{decode_header_value, encode_header_value, HttpRequest};
use durable_mcp::protocol::parse_message;
use durable_mcp::testing::TestServer;
use durable_mcp::token::{self, Binding, KeyRing};
use durable_mcp::{Cx, Registry, Tool, ToolError};
use proptest::prelude::*;
use serde_json::{json, Value};

fn ring() -> KeyRing {
    KeyRing::parse("k:0123456789abcdef0123456789abcdef").expect("ring")
}

/// JSON values of every shape, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("jsonrpc".to_string()),
                    Just("id".to_string()),
                    Just("method".to_string()),
                    Just("params".to_string()),
                    Just("result".to_string()),
                    Just("error".to_string()),
                    Just("_meta".to_string()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn hello_server() -> TestServer {
    let mut r = Registry::new();
    r.tool(Tool::new(
        "hello",
        async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            let a = cx
                .elicit_with(
                    "a",
                    durable_mcp::form("A?", json!({"type": "object", "properties": {}})),
                )
                .await?;
            Ok(a.action)
        },
    ));
    TestServer::new(r)
}

proptest! {
    #[test]
    fn json_rpc_parsing_answers_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_message(&bytes);
    }

    #[test]
    fn json_rpc_parsing_answers_any_json(v in any_json()) {
        let _ = parse_message(v.to_string().as_bytes());
    }

    #[test]
    fn tokens_refuse_anything_forged(s in "[A-Za-z0-9._=-]{0,200}", now in any::<u64>()) {
        let binding = Binding { method: "tools/call", target: "t", args: "x", sub: "" };
        prop_assert!(token::open(&ring(), &s, now, binding).is_err());
        prop_assert!(token::open_unbound(&ring(), &s, now).is_err());
    }

    #[test]
    fn a_token_with_any_byte_changed_is_refused(pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let claims = token::Claims {
            kid: String::new(), method: "tools/call".into(), target: "t".into(), args: "x".into(),
            sub: String::new(), iat: 1, exp: u64::MAX, sid: "s".into(), round: 1,
            arguments: None, durable: false, journal: None,
        };
        let sealed = token::seal(&ring(), claims).expect("seal");
        let mut bytes = sealed.clone().into_bytes();
        let i = pos.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        let changed = String::from_utf8_lossy(&bytes).into_owned();
        prop_assume!(changed != sealed);
        prop_assert!(token::open_unbound(&ring(), &changed, 2).is_err());
    }

    #[test]
    fn header_values_round_trip_and_garbage_decodes_or_is_refused(s in ".{0,64}", junk in "=\\?base64\\?.{0,40}\\?=") {
        prop_assert_eq!(decode_header_value(&encode_header_value(&s)).map(|d| d.into_owned()), Some(s));
        let _ = decode_header_value(&junk);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_request_body_gets_an_answer_below_500(body in any_json(), method in "(POST|GET|DELETE|PUT|PATCH|OPTIONS)") {
        let mut s = hello_server();
        let r = s.raw(&method, &[("content-type", "application/json"), ("accept", "application/json, text/event-stream")], &body.to_string());
        prop_assert!(r.status < 500, "{} {}", r.status, r.json);
    }

    #[test]
    fn any_last_event_id_or_session_id_gets_an_answer_below_500(
        last in ".{0,40}", sid in "[a-zA-Z0-9]{0,70}"
    ) {
        let mut s = hello_server();
        let req = HttpRequest {
            method: "GET".into(),
            path: "/mcp".into(),
            headers: vec![
                ("host".into(), "localhost:8787".into()),
                ("mcp-session-id".into(), sid),
                ("last-event-id".into(), last),
            ],
            body: Vec::new(),
        };
        let r = s.send(req);
        prop_assert!(r.status < 500, "{} {}", r.status, r.json);
    }
}
