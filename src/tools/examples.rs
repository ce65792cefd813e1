//! Example tools: what a durable-mcp tool looks like.

use serde::Deserialize;
use serde_json::json;

use crate::engine::{ask, form, Cx, ToolError};
use crate::server::{text, CallToolResult, Registry, Resource, Tool};

/// Registers the examples.
pub(super) fn register(r: &mut Registry) {
    r.tool(
        Tool::new("deploy", deploy)
            .title("Deploy a service")
            .description(
                "Deploys a service: asks the user for the target, asks the client's model whether \
                 it is safe now, opens a change ticket once, and reports. Runs durably: its \
                 progress lives in a Durable Object between rounds.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "service": {"type": "string", "description": "What to deploy"},
                    "ticket_url": {"type": "string", "description": "Optional change-ticket webhook: \
                        POSTed {service, target} once per call; its JSON answer's `ticket` is the ticket id"}
                },
                "required": ["service"]
            }))
            .durable(),
    );
    r.tool(
        Tool::new("add", add)
            .description("Adds two numbers.")
            .input_schema(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {"sum": {"type": "number"}},
                "required": ["sum"]
            })),
    );
    r.resource(
        Resource::new(
            "durable-mcp://about",
            "about",
            async |_: &mut Cx, _: serde_json::Value| {
                Ok(vec![json!({
                    "uri": "durable-mcp://about",
                    "mimeType": "text/plain",
                    "text": "durable-mcp: MCP tools that can pause mid-call and resume.",
                })])
            },
        )
        .set("mimeType", json!("text/plain"))
        .set("description", json!("What this server is")),
    );
}

#[derive(Deserialize)]
struct DeployArgs {
    service: String,
    #[serde(default)]
    ticket_url: Option<String>,
}

/// Seed 000's story: elicit a target, sample a safety verdict, memoize the
/// side effect (a change ticket), answer.
async fn deploy(cx: &mut Cx, args: DeployArgs) -> Result<CallToolResult, ToolError> {
    let choice = cx
        .elicit(
            "target",
            form(
                format!("Where should {} be deployed?", args.service),
                json!({
                    "type": "object",
                    "properties": {"target": {"type": "string", "enum": ["staging", "production"]}},
                    "required": ["target"]
                }),
            ),
        )
        .await?;
    if !choice.accepted() {
        return Ok(text(format!(
            "Deployment of {} cancelled by the user.",
            args.service
        )));
    }
    let target: String = choice
        .field("target")
        .ok_or_else(|| ToolError::failed("the form came back without a target"))?;
    let verdict = cx
        .sample(
            "safety",
            ask(
                format!(
                    "Is it safe to deploy {} to {target} right now? Answer yes or no.",
                    args.service
                ),
                50,
            ),
        )
        .await?;
    if !verdict.text().to_ascii_lowercase().contains("yes") {
        return Ok(text(format!(
            "Not deploying {} to {target}: the model said {:?}.",
            args.service,
            verdict.text()
        )));
    }
    let ticket: String = cx
        .once("ticket", async || open_ticket(&args, &target).await)
        .await?;
    Ok(text(format!(
        "Deployed {} to {target} (ticket {ticket}).",
        args.service
    )))
}

/// The side effect: a change ticket from the webhook when one is given,
/// otherwise an id derived from the request. `cx.once` makes sure a replay
/// never opens a second ticket.
async fn open_ticket(args: &DeployArgs, target: &str) -> Result<String, ToolError> {
    match &args.ticket_url {
        Some(url) => {
            let answer =
                super::webhook::post_json(url, &json!({"service": args.service, "target": target}))
                    .await?;
            answer["ticket"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| ToolError::failed("the ticket webhook answered without a ticket"))
        }
        None => Ok(format!(
            "CHG-{}",
            crate::engine::digest_json(&json!([args.service, target]))[..8].to_uppercase()
        )),
    }
}

#[derive(Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

async fn add(_: &mut Cx, args: AddArgs) -> Result<CallToolResult, ToolError> {
    let sum = args.a + args.b;
    Ok(text(sum.to_string()).with_structured(json!({ "sum": sum })))
}
