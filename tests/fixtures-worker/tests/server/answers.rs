//! Answers of the right keys but the wrong types: refused with `-32602`
//! naming the key, the question left open, and the corrected answer then
//! completes the call — stateless (the form's schema is not in the token:
//! the replay checks it) and durable alike.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{assert_error, Harness};
use durable_mcp::testing::TestServer;
use durable_mcp::{ask, text, CallToolResult, Cx, Elicitation, Tool, ToolError};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Planet {
    Earth,
    Venus,
}

#[derive(Deserialize, JsonSchema)]
struct Where {
    planet: Planet,
}

/// A stateless tool asking a typed form, the model and the roots.
async fn trip(cx: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    let Elicitation::Accepted(Where { planet }) = cx.elicit::<Where>("where", "Where?").await?
    else {
        return Ok(text("stayed home"));
    };
    let verdict = cx.sample("model", ask("Go?", 10)).await?;
    let roots = cx.roots("roots").await?;
    let planet = match planet {
        Planet::Earth => "earth",
        Planet::Venus => "venus",
    };
    Ok(text(format!("{planet} {} {}", verdict.text(), roots.len())))
}

fn harness() -> TestServer {
    let mut h = Harness::new();
    h.server.registry.tool(Tool::new("trip", trip));
    h
}

/// One round: `answers` to the state `state`.
fn round(h: &mut TestServer, tool: &str, args: &Value, state: &Value, answers: Value) -> Value {
    let r = h.call_tool(
        tool,
        args.clone(),
        json!({"requestState": state, "inputResponses": answers}),
    );
    assert_eq!(r.status, 200, "{}", r.json);
    r.json
}

/// Sends `bad` (must be refused naming `key`), then `good` with the same
/// state; returns the reply to `good`.
fn refused_then_taken(
    h: &mut TestServer,
    tool: &str,
    args: &Value,
    state: &Value,
    key: &str,
    bad: Value,
    good: Value,
) -> Value {
    let r = h.call_tool(
        tool,
        args.clone(),
        json!({"requestState": state, "inputResponses": {key: bad}}),
    );
    assert_error(&r, 400, -32602);
    let message = r.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("{key:?}")), "{message}");
    round(h, tool, args, state, json!({key: good}))
}

fn state(reply: &Value) -> Value {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].clone()
}

#[test]
fn a_stateless_call_survives_every_wrong_typed_answer() {
    let mut h = harness();
    let args = json!({});
    let first = h.call_tool("trip", args.clone(), json!({}));
    let s1 = state(&first.json);
    for bad in [json!({"planet": 5}), json!({"planet": "mars"}), json!({})] {
        let r = h.call_tool(
            "trip",
            args.clone(),
            json!({"requestState": s1, "inputResponses":
                {"where": {"action": "accept", "content": bad}}}),
        );
        assert_error(&r, 400, -32602);
    }
    let good_form = json!({"action": "accept", "content": {"planet": "venus"}});
    let r2 = round(&mut h, "trip", &args, &s1, json!({"where": good_form}));
    let s2 = state(&r2);
    let text_block = json!({"type": "text", "text": "yes"});
    for bad in [
        json!({"role": "assistant", "content": "yes"}),
        json!({"role": "assistant", "content": null}),
        json!({"role": 5, "content": text_block}),
    ] {
        let r = h.call_tool(
            "trip",
            args.clone(),
            json!({"requestState": s2, "inputResponses": {"model": bad}}),
        );
        assert_error(&r, 400, -32602);
    }
    let r3 = round(
        &mut h,
        "trip",
        &args,
        &s2,
        json!({"model": {"role": "assistant", "content": text_block}}),
    );
    let s3 = state(&r3);
    let done = refused_then_taken(
        &mut h,
        "trip",
        &args,
        &s3,
        "roots",
        json!({"roots": [5]}),
        json!({"roots": [{"uri": "file:///a"}]}),
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "venus yes 1",
        "{done}"
    );
}

#[test]
fn a_durable_call_survives_wrong_typed_answers_and_takes_the_corrected_one() {
    let mut h = Harness::new();
    let args = json!({"service": "api"});
    let first = h.call_tool("deploy", args.clone(), json!({}));
    let s1 = state(&first.json);
    let r2 = refused_then_taken(
        &mut h,
        "deploy",
        &args,
        &s1,
        "target",
        json!({"action": "accept", "content": {"target": "mars"}}),
        json!({"action": "accept", "content": {"target": "staging"}}),
    );
    let s2 = state(&r2);
    let done = refused_then_taken(
        &mut h,
        "deploy",
        &args,
        &s2,
        "safety",
        json!({"role": "assistant", "content": "yes"}),
        json!({"role": "assistant", "content": {"type": "text", "text": "yes"}}),
    );
    let said = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.starts_with("Deployed api to staging"), "{done}");
}

/// A retry decorated with `_meta` (as some SDKs send it) is the same
/// answer: the lost reply comes back, not "already used".
#[test]
fn a_durable_retry_with_meta_added_gets_the_recorded_reply() {
    let mut h = Harness::new();
    let args = json!({"service": "api"});
    let s1 = state(&h.call_tool("deploy", args.clone(), json!({})).json);
    let form = json!({"action": "accept", "content": {"target": "staging"}});
    let first = round(&mut h, "deploy", &args, &s1, json!({"target": form}));
    let mut decorated = form.clone();
    decorated["_meta"] = json!({});
    let again = round(&mut h, "deploy", &args, &s1, json!({"target": decorated}));
    assert_eq!(again, first);
}
