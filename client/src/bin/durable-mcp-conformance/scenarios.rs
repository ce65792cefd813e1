//! The conformance suite's client scenarios other than sign-in. Each is
//! what the scenario's server expects a client to do (list, call, answer,
//! reconnect); the behavior under test — headers, `_meta`, version
//! negotiation, request state, defaults, reconnecting after `retry:` —
//! is the library's own, not arranged here.

use durable_mcp_client::{Client, Handler, Round, Wire};
use serde_json::{json, Map, Value};

/// Answers the scenarios' questions: every form accepted as it comes (the
/// client then fills in the schema's defaults), every sampling request
/// with a fixed reply.
struct Accept;

impl Handler for Accept {
    fn elicit(&mut self, _params: &Value) -> Value {
        json!({"action": "accept", "content": {}})
    }
    fn sample(&mut self, _params: &Value) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
               "model": "durable-mcp-conformance"})
    }
}

/// Runs `scenario` against `url` at protocol `version`.
pub(crate) fn run(scenario: &str, url: &str, version: &str, context: &Value) -> Result<(), String> {
    let mut client = Client::new(url, Accept)
        .with_wire(Wire::for_version(version))
        .with_protocol_version(version)
        // A session server may ask outside the call's stream (the
        // elicitation scenario's tool does): listen on the GET stream too.
        .with_listen_stream(true)
        .with_client_info("durable-mcp-conformance", env!("CARGO_PKG_VERSION"));
    let outcome = match scenario {
        "initialize" | "tools_call" => call_first_tool(&mut client),
        "elicitation-sep1034-client-defaults" => {
            call_listed(&mut client, "test_client_elicitation_defaults")
        }
        "sse-retry" => call_listed(&mut client, "test_reconnection"),
        "request-metadata" => discover_and_list(&mut client),
        "sep-2322-client-request-state" => request_state(&mut client),
        "http-standard-headers" => everything_named(&mut client),
        "http-custom-headers" => context_calls(&mut client, context),
        "http-invalid-tool-headers" => call_every_tool(&mut client),
        "json-schema-ref-no-deref" => client.list_tools().map(drop).map_err(|e| e.to_string()),
        "json-schema-2020-12-preservation" => echo_schema(&mut client),
        _ => Err(format!("unknown scenario {scenario:?}")),
    };
    client.close();
    outcome
}

/// `e.to_string()` for `?` on the library's errors.
fn text(e: durable_mcp_client::Error) -> String {
    e.to_string()
}

/// Lists the tools and calls the first with `{a: 2, b: 3}` (the scenario's
/// `add_numbers`); none listed is fine (`initialize` lists none).
fn call_first_tool(client: &mut Client) -> Result<(), String> {
    let tools = client.list_tools().map_err(text)?;
    if let Some(name) = tools.first().and_then(|t| t["name"].as_str()) {
        client
            .call_tool(name, json!({"a": 2, "b": 3}))
            .map_err(text)?;
    }
    Ok(())
}

/// Lists the tools, then calls `name` (which must be listed) without
/// arguments.
fn call_listed(client: &mut Client, name: &str) -> Result<(), String> {
    let tools = client.list_tools().map_err(text)?;
    if !tools.iter().any(|t| t["name"] == name) {
        return Err(format!("the server does not list {name}"));
    }
    client.call_tool(name, json!({})).map_err(text).map(drop)
}

/// `server/discover`, then `tools/list`: the server refuses the first
/// request's version, and the client must ask again in one it names.
fn discover_and_list(client: &mut Client) -> Result<(), String> {
    client.discover().map_err(text)?;
    client.list_tools().map_err(text).map(drop)
}

/// SEP-2322: a call answered with `input_required` is retried with the
/// answers and the `requestState` unchanged, under a new id, and another
/// call in between carries nothing of it; a server that gives no state
/// gets none back; a result without `resultType` is complete.
fn request_state(client: &mut Client) -> Result<(), String> {
    client.list_tools().map_err(text)?;
    let first = client
        .call_tool_round("test_mrtr_echo_state", json!({}), None)
        .map_err(text)?;
    if let Round::InputRequired(input) = first {
        let retry = client.answer_input(&input);
        client
            .call_tool("test_mrtr_unrelated", json!({}))
            .map_err(text)?;
        let again = client
            .call_tool_round("test_mrtr_echo_state", json!({}), Some(&retry))
            .map_err(text)?;
        if !matches!(again, Round::Complete(_)) {
            return Err(format!("test_mrtr_echo_state did not complete: {again:?}"));
        }
    }
    client
        .call_tool("test_mrtr_no_state", json!({}))
        .map_err(text)?;
    client
        .call_tool("test_mrtr_no_result_type", json!({}))
        .map_err(text)
        .map(drop)
}

/// SEP-2243 standard headers: every kind of request, each named one once
/// per listed name (`Mcp-Name` from a tool or prompt name, a resource URI).
fn everything_named(client: &mut Client) -> Result<(), String> {
    for tool in client.list_tools().map_err(text)? {
        let name = tool["name"].as_str().unwrap_or_default();
        client.call_tool(name, json!({})).map_err(text)?;
    }
    for resource in client.list_resources().map_err(text)? {
        let uri = resource["uri"].as_str().unwrap_or_default();
        client.read_resource(uri).map_err(text)?;
    }
    for prompt in client.list_prompts().map_err(text)? {
        let name = prompt["name"].as_str().unwrap_or_default();
        client.get_prompt(name, json!({})).map_err(text)?;
    }
    Ok(())
}

/// SEP-2243 custom headers: the tool calls the scenario's context names
/// (`toolCalls: [{name, arguments}]`), after listing the tools whose
/// `x-mcp-header` annotations say what to mirror.
fn context_calls(client: &mut Client, context: &Value) -> Result<(), String> {
    let calls = context["toolCalls"]
        .as_array()
        .ok_or("MCP_CONFORMANCE_CONTEXT names no toolCalls")?;
    client.list_tools().map_err(text)?;
    for call in calls {
        let name = call["name"].as_str().ok_or("a tool call without a name")?;
        let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
        client.call_tool(name, arguments).map_err(text)?;
    }
    Ok(())
}

/// Calls every tool the client kept from the list (the library leaves out
/// those with invalid `x-mcp-header` annotations), each with arguments made
/// up from its schema.
fn call_every_tool(client: &mut Client) -> Result<(), String> {
    for tool in client.list_tools().map_err(text)? {
        let name = tool["name"].as_str().unwrap_or_default();
        let arguments = example_arguments(&tool["inputSchema"]);
        client.call_tool(name, arguments).map_err(text)?;
    }
    Ok(())
}

/// A value for each required parameter, of its type.
fn example_arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    for key in schema["required"].as_array().into_iter().flatten() {
        let Some(key) = key.as_str() else { continue };
        let value = match schema["properties"][key]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("example"),
        };
        args.insert(key.to_string(), value);
    }
    Value::Object(args)
}

/// JSON Schema 2020-12 preservation: the focal tool's input schema, as the
/// client holds it, is sent back through the echo tool.
fn echo_schema(client: &mut Client) -> Result<(), String> {
    let tools = client.list_tools().map_err(text)?;
    let focal = tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .ok_or("the server does not list json_schema_2020_12_tool")?;
    let schema = focal["inputSchema"].clone();
    client
        .call_tool("json_schema_echo", json!({ "schema": schema }))
        .map_err(text)
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_arguments_follow_the_required_types() {
        let schema = json!({"type": "object", "required": ["region", "n", "on"],
            "properties": {"region": {"type": "string"}, "n": {"type": "integer"},
                           "on": {"type": "boolean"}, "extra": {"type": "string"}}});
        assert_eq!(
            example_arguments(&schema),
            json!({"region": "example", "n": 1, "on": true})
        );
    }
}
