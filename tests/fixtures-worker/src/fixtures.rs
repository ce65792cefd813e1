//! The conformance suite's fixtures (`@modelcontextprotocol/conformance`,
//! `examples/servers/typescript/everything-server.ts`): exact names and
//! outputs, because the scenarios check them.
//!
//! The fixture server keeps its MRTR tools as hand-written state machines;
//! here they are ordinary tool bodies on the replay engine, so the same
//! bodies also serve the session wire.

use serde_json::{json, Map, Value};

use durable_mcp::{
    content, text, CallToolResult, Cx, ListKind, LogLevel, Prompt, Registry, Resource,
    ResourceTemplate, Tool, ToolError,
};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

type Out = Result<CallToolResult, ToolError>;

/// Registers every fixture.
pub(crate) fn register(r: &mut Registry) {
    content_tools(r);
    interactive_tools(r);
    mrtr_tools(r);
    r.tool(Tool::new("test_custom_header", custom_header));
    resources(r);
    prompts(r);
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A tool that always returns the same content.
fn fixed(name: &str, description: &str, blocks: Vec<Value>) -> Tool {
    Tool::new(name, async move |_: &mut Cx, _: Value| -> Out {
        Ok(CallToolResult::new(blocks.clone()))
    })
    .description(description)
    .input_schema(empty_schema())
}

fn content_tools(r: &mut Registry) {
    r.tool(fixed(
        "test_simple_text",
        "Tests simple text content response",
        vec![content::text("This is a simple text response for testing.")],
    ));
    r.tool(fixed(
        "test_image_content",
        "Tests image content response",
        vec![content::image(PNG, "image/png")],
    ));
    r.tool(fixed(
        "test_audio_content",
        "Tests audio content response",
        vec![content::audio(WAV, "audio/wav")],
    ));
    r.tool(fixed(
        "test_embedded_resource",
        "Tests embedded resource content response",
        vec![content::embedded_text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )],
    ));
    r.tool(fixed(
        "test_multiple_content_types",
        "Tests response with multiple content types (text, image, resource)",
        vec![
            content::text("Multiple content types test:"),
            content::image(PNG, "image/png"),
            content::embedded_text(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ],
    ));
    r.tool(
        Tool::new("test_error_handling", async |_: &mut Cx, _: Value| -> Out {
            Ok(CallToolResult::error(
                "This tool intentionally returns an error for testing",
            ))
        })
        .description("Tests error response handling")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new(
            "test_tool_with_logging",
            async |cx: &mut Cx, _: Value| -> Out {
                for m in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    cx.log(LogLevel::Info, json!(m));
                }
                Ok(text("Tool with logging executed successfully"))
            },
        )
        .description("Tests tool that emits log messages during execution")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new(
            "test_tool_with_progress",
            async |cx: &mut Cx, _: Value| -> Out {
                for step in [0.0, 50.0, 100.0] {
                    cx.progress(
                        step,
                        Some(100.0),
                        Some(&format!("Completed step {step} of 100")),
                    );
                }
                let token = cx.progress_token().unwrap_or(json!(0));
                Ok(text(match token {
                    Value::String(s) => s,
                    other => other.to_string(),
                }))
            },
        )
        .description("Tests tool that reports progress notifications")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new("test_logging_tool", async |cx: &mut Cx, _: Value| -> Out {
            cx.log(LogLevel::Info, json!("Diagnostic trace logging activated"));
            Ok(text("Logging evaluated"))
        })
        .description("Diagnostic logging validator tool")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new("json_schema_2020_12_tool", async |_: &mut Cx, args: Value| -> Out {
            Ok(text(format!("JSON Schema 2020-12 tool called with: {args}")))
        })
        .description("Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)")
        .input_schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })),
    );
}

/// Tools that ask the client mid-call (the session-era fixtures, which run
/// on every wire here).
fn interactive_tools(r: &mut Registry) {
    r.tool(
        Tool::new("test_sampling", async |cx: &mut Cx, args: Value| -> Out {
            let prompt = args["prompt"].as_str().unwrap_or_default().to_string();
            let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100});
            match cx.sample("sampling", params).await {
                Ok(r) => Ok(text(format!("LLM response: {}", non_empty(r.text(), "No response")))),
                Err(ToolError::Client(e)) => Ok(text(format!("Sampling not supported or error: {e}"))),
                Err(e) => Err(e),
            }
        })
        .description("Tests server-initiated sampling (LLM completion request)")
        .input_schema(json!({"type": "object", "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}}, "required": ["prompt"]})),
    );
    r.tool(
        Tool::new("test_elicitation", async |cx: &mut Cx, args: Value| -> Out {
            let message = args["message"].as_str().unwrap_or_default().to_string();
            // The schema the scenario (tools-call-elicitation) names; its
            // client answers exactly these fields, and answers are now held
            // to the schema.
            let params = json!({"message": message, "requestedSchema": {"type": "object",
                "properties": {"username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                "required": ["username", "email"]}});
            elicit_report(cx, "elicitation", params, "User response").await
        })
        .description("Tests server-initiated elicitation (user input request)")
        .input_schema(json!({"type": "object", "properties": {"message": {"type": "string", "description": "The message to show the user"}}, "required": ["message"]})),
    );
    r.tool(
        Tool::new("test_elicitation_sep1034_defaults", async |cx: &mut Cx, _: Value| -> Out {
            let params = json!({"message": "Please review and update the form fields with defaults",
                "requestedSchema": {"type": "object", "required": [], "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}}}});
            elicit_report(cx, "defaults", params, "Elicitation completed").await
        })
        .description("Tests elicitation with default values per SEP-1034")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new("test_elicitation_sep1330_enums", async |cx: &mut Cx, _: Value| -> Out {
            let params = json!({"message": "Please select options from the enum fields",
                "requestedSchema": {"type": "object", "required": [], "properties": {
                    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                        {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}]}}}}});
            elicit_report(cx, "enums", params, "Elicitation completed").await
        })
        .description("Tests elicitation with enum schema improvements per SEP-1330")
        .input_schema(empty_schema()),
    );
    for (name, kind) in [
        ("test_trigger_tool_change", ListKind::Tools),
        ("test_trigger_prompt_change", ListKind::Prompts),
    ] {
        r.tool(
            Tool::new(name, async move |cx: &mut Cx, _: Value| -> Out {
                cx.list_changed(kind);
                Ok(text("Mutation triggered"))
            })
            .description(&format!(
                "Announces that the {} list changed, to every subscriptions/listen stream",
                kind.as_str()
            ))
            .input_schema(empty_schema()),
        );
    }
    r.tool(
        Tool::new("test_reconnection", async |cx: &mut Cx, _: Value| -> Out {
            // Lets go of the client mid-call (SEP-1699 polling); the result
            // comes when it reconnects.
            cx.checkpoint("reconnect").await?;
            Ok(text(
                "Reconnection test completed successfully. If you received this, the client properly \
                 reconnected after stream closure.",
            ))
        })
        .description(
            "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the stream \
             mid-call and send the result after client reconnects.",
        )
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new(
            "test_missing_capability",
            async |cx: &mut Cx, _: Value| -> Out {
                cx.sample("needs_sampling", ask_text("Say hello", 10))
                    .await?;
                Ok(text("Success"))
            },
        )
        .description("Test tool requiring sampling")
        .input_schema(empty_schema()),
    );
    r.tool(
        Tool::new(
            "test_streaming_elicitation",
            async |cx: &mut Cx, _: Value| -> Out {
                // On the stateless wire the question travels inside an
                // input_required result, never as a request on the stream.
                let answer = cx
                    .elicit_with("streaming", name_form("What is your name?"))
                    .await?;
                Ok(text(format!("Streaming complete ({})", answer.action)))
            },
        )
        .description("Diagnostic tool validating response progress streams")
        .input_schema(empty_schema()),
    );
}

fn non_empty(s: String, fallback: &str) -> String {
    if s.is_empty() {
        fallback.to_string()
    } else {
        s
    }
}

async fn elicit_report(cx: &mut Cx, key: &str, params: Value, label: &str) -> Out {
    match cx.elicit_with(key, params).await {
        Ok(r) => {
            let content = r.content.map(Value::Object).unwrap_or_else(|| json!({}));
            Ok(text(format!(
                "{label}: action={}, content={content}",
                r.action
            )))
        }
        Err(ToolError::Client(e)) => Ok(text(format!("Elicitation not supported or error: {e}"))),
        Err(e) => Err(e),
    }
}

fn ask_text(prompt: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens})
}

fn string_form(message: &str, field: &str, kind: &str) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object",
        "properties": {field: {"type": kind}}, "required": [field]}})
}

fn name_form(message: &str) -> Value {
    string_form(message, "name", "string")
}

/// Echoes a region that the client also sends as the `Mcp-Param-Region`
/// header (SEP-2243 custom headers: `http-custom-header-server-validation`).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RegionArgs {
    /// The region; mirrored in the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

async fn custom_header(_: &mut Cx, a: RegionArgs) -> Out {
    Ok(text(format!("Region: {}", a.region)))
}

/// The MRTR fixtures (`input-required-result-*` scenarios).
fn mrtr_tools(r: &mut Registry) {
    // Every MRTR fixture takes no arguments.
    let tool = |description: &str, t: Tool| t.description(description).input_schema(empty_schema());
    r.tool(tool(
        "MRTR: returns InputRequiredResult with elicitation request",
        Tool::new(
            "test_input_required_result_elicitation",
            async |cx: &mut Cx, _: Value| -> Out {
                let a = cx
                    .elicit_with("user_name", name_form("What is your name?"))
                    .await?;
                Ok(text(format!(
                    "Hello, {}!",
                    a.field::<String>("name")
                        .unwrap_or_else(|| "unknown".into())
                )))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: returns InputRequiredResult with sampling request",
        Tool::new(
            "test_input_required_result_sampling",
            async |cx: &mut Cx, _: Value| -> Out {
                let s = cx
                    .sample(
                        "sample_request",
                        ask_text("What is the capital of France?", 100),
                    )
                    .await?;
                Ok(text(format!(
                    "Sampling result: {}",
                    non_empty(s.text(), "no response")
                )))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: returns InputRequiredResult with roots/list request",
        Tool::new(
            "test_input_required_result_list_roots",
            async |cx: &mut Cx, _: Value| -> Out {
                let roots = cx.roots("roots_request").await?;
                Ok(text(format!("Found {} root(s)", roots.len())))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: returns InputRequiredResult with requestState",
        Tool::new(
            "test_input_required_result_request_state",
            async |cx: &mut Cx, _: Value| -> Out {
                let a = cx
                    .elicit_with("confirm", string_form("Please confirm", "ok", "boolean"))
                    .await?;
                Ok(text(if a.field::<bool>("ok") == Some(true) {
                    "state-ok: requestState validated"
                } else {
                    "state-not-confirmed"
                }))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: returns InputRequiredResult with multiple input requests",
        Tool::new(
            "test_input_required_result_multiple_inputs",
            async |cx: &mut Cx, _: Value| -> Out {
                // Asked before any await: all three go out in one round.
                let name = cx.elicit_with("user_name", name_form("What is your name?"));
                let greeting = cx.sample("greeting", ask_text("Generate a greeting", 50));
                let roots = cx.roots("client_roots");
                let (name, greeting, roots) = (name.await?, greeting.await?, roots.await?);
                Ok(text(format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    name.field::<String>("name").unwrap_or_default(),
                    non_empty(greeting.text(), "Hello there!"),
                    roots.len()
                )))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: multi-round InputRequiredResult workflow",
        Tool::new(
            "test_input_required_result_multi_round",
            async |cx: &mut Cx, _: Value| -> Out {
                let n = cx
                    .elicit_with("step1", name_form("Step 1: What is your name?"))
                    .await?;
                let c = cx
                    .elicit_with(
                        "step2",
                        string_form("Step 2: What is your favorite color?", "color", "string"),
                    )
                    .await?;
                Ok(text(format!(
                    "Multi-round complete for {} who likes {}",
                    n.field::<String>("name").unwrap_or_default(),
                    c.field::<String>("color").unwrap_or_default()
                )))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: HMAC-signed requestState integrity test",
        Tool::new(
            "test_input_required_result_tampered_state",
            async |cx: &mut Cx, _: Value| -> Out {
                cx.elicit_with("confirm", string_form("Please confirm", "ok", "boolean"))
                    .await?;
                Ok(text("integrity-ok: state verified"))
            },
        ),
    ));
    r.tool(tool(
        "MRTR: respects client capabilities in inputRequests",
        Tool::new(
            "test_input_required_result_capabilities",
            async |cx: &mut Cx, _: Value| -> Out {
                let caps = cx.capabilities();
                let mut asks = Vec::new();
                if caps.elicitation {
                    asks.push((
                        "elicit_input",
                        cx.elicit_with(
                            "elicit_input",
                            string_form("Elicitation input", "value", "string"),
                        )
                        .await
                        .map(|_| ()),
                    ));
                }
                if caps.sampling {
                    asks.push((
                        "sample_input",
                        cx.sample("sample_input", ask_text("Sample request", 50))
                            .await
                            .map(|_| ()),
                    ));
                }
                if asks.is_empty() {
                    return Ok(text("No supported capabilities declared"));
                }
                let mut keys = Vec::new();
                for (key, result) in asks {
                    result?;
                    keys.push(key);
                }
                Ok(text(format!(
                    "capabilities-ok: received {}",
                    keys.join(",")
                )))
            },
        ),
    ));
}

fn resources(r: &mut Registry) {
    let text_resource =
        |uri: &'static str, name: &str, title: &str, description: &str, body: &'static str| {
            Resource::new(uri, name, async move |_: &mut Cx, _: Value| {
                Ok(vec![
                    json!({"uri": uri, "mimeType": "text/plain", "text": body}),
                ])
            })
            .set("title", json!(title))
            .set("description", json!(description))
            .set("mimeType", json!("text/plain"))
        };
    r.resource(text_resource(
        "test://static-text",
        "static-text",
        "Static Text Resource",
        "A static text resource for testing",
        "This is the content of the static text resource.",
    ));
    r.resource(text_resource(
        "test://watched-resource",
        "watched-resource",
        "Watched Resource",
        "A resource that auto-updates every 3 seconds",
        "Watched resource content",
    ));
    r.resource(
        Resource::new(
            "test://static-binary",
            "static-binary",
            async |_: &mut Cx, _: Value| {
                Ok(vec![
                    json!({"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG}),
                ])
            },
        )
        .set("title", json!("Static Binary Resource"))
        .set(
            "description",
            json!("A static binary resource (image) for testing"),
        )
        .set("mimeType", json!("image/png")),
    );
    r.template(
        ResourceTemplate::new("test://template/{id}/data", "template", async |_: &mut Cx, vars: Value| {
            let id = vars["id"].as_str().unwrap_or_default();
            let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![json!({"uri": vars["uri"], "mimeType": "application/json", "text": body.to_string()})])
        })
        .set("title", json!("Resource Template"))
        .set("description", json!("A resource template with parameter substitution"))
        .set("mimeType", json!("application/json")),
    );
}

fn user_text(s: &str) -> Value {
    json!({"role": "user", "content": content::text(s)})
}

fn prompts(r: &mut Registry) {
    r.prompt(
        Prompt::new("test_simple_prompt", async |_: &mut Cx, _: Value| {
            Ok(json!({"messages": [user_text("This is a simple prompt for testing.")]}))
        })
        .set("title", json!("Simple Test Prompt"))
        .set("description", json!("A simple prompt without arguments")),
    );
    r.prompt(
        Prompt::new("test_prompt_with_arguments", async |_: &mut Cx, args: Value| {
            let arg = |k: &str| args[k].as_str().unwrap_or_default().to_string();
            let (a1, a2) = (arg("arg1"), arg("arg2"));
            Ok(json!({"messages": [user_text(&format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'"))]}))
        })
        .set("title", json!("Prompt With Arguments"))
        .set("description", json!("A prompt with required arguments"))
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
        .complete(|_, _, _: &Map<String, Value>| Vec::new()),
    );
    r.prompt(
        Prompt::new("test_prompt_with_embedded_resource", async |_: &mut Cx, args: Value| {
            let uri = args["resourceUri"].as_str().unwrap_or("test://example-resource").to_string();
            Ok(json!({"messages": [
                {"role": "user", "content": content::embedded_text(&uri, "text/plain", "Embedded resource content for testing.")},
                user_text("Please process the embedded resource above.")
            ]}))
        })
        .set("title", json!("Prompt With Embedded Resource"))
        .set("description", json!("A prompt that includes an embedded resource"))
        .argument("resourceUri", "URI of the resource to embed", true),
    );
    r.prompt(
        Prompt::new("test_prompt_with_image", async |_: &mut Cx, _: Value| {
            Ok(json!({"messages": [
                {"role": "user", "content": content::image(PNG, "image/png")},
                user_text("Please analyze the image above.")
            ]}))
        })
        .set("title", json!("Prompt With Image"))
        .set("description", json!("A prompt that includes image content")),
    );
    r.prompt(
        Prompt::new(
            "test_input_required_result_prompt",
            async |cx: &mut Cx, _: Value| {
                let a = cx
                    .elicit_with(
                        "user_context",
                        string_form("What context should the prompt use?", "context", "string"),
                    )
                    .await?;
                let context = a.field::<String>("context").unwrap_or_default();
                Ok(json!({"messages": [user_text(&format!("Prompt with context: {context}"))]}))
            },
        )
        .set(
            "description",
            json!("MRTR: prompt that requires elicitation input"),
        ),
    );
}
