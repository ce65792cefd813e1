//! The example tools the e2e tests drive (`deploy`, `add`) and a resource.
//! They use the typed authoring surface: schemas derived from the argument
//! and result types, a typed elicitation form.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use durable_mcp::engine::digest_json;
use durable_mcp::{
    ask, text, CallToolResult, Cx, Elicitation, Json, Registry, Resource, Tool, ToolError,
};

/// What the examples read from the Worker's configuration.
pub(crate) struct Settings {
    /// `TICKET_WEBHOOK`: where `deploy` opens change tickets (unset: a
    /// ticket id is derived locally). Configuration, never an argument, so
    /// no caller can make the Worker send requests where it likes.
    pub(crate) ticket_webhook: Option<String>,
}

/// Registers the examples.
pub(crate) fn register(r: &mut Registry) {
    r.tool(
        Tool::new("deploy", deploy)
            .title("Deploy a service")
            .durable(),
    );
    r.tool(Tool::new("add", add));
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

/// Deploys a service: asks the user for the target, asks the client's model
/// whether it is safe now, opens a change ticket once, and reports. Runs
/// durably: its progress lives in a Durable Object between rounds.
#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    /// What to deploy
    service: String,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Target {
    Staging,
    Production,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Staging => "staging",
            Target::Production => "production",
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct TargetForm {
    target: Target,
}

/// Seed 000's story: elicit a target, sample a safety verdict, memoize the
/// side effect (a change ticket), answer.
async fn deploy(cx: &mut Cx, args: DeployArgs) -> Result<CallToolResult, ToolError> {
    let form = cx
        .elicit::<TargetForm>(
            "target",
            format!("Where should {} be deployed?", args.service),
        )
        .await?;
    let Elicitation::Accepted(TargetForm { target }) = form else {
        return Ok(text(format!(
            "Deployment of {} cancelled by the user.",
            args.service
        )));
    };
    let target = target.name();
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
    let webhook = cx.state::<Settings>()?.ticket_webhook.clone();
    let key = cx.idempotency_key("ticket");
    let ticket: String = cx
        .once("ticket", async || {
            open_ticket(webhook, &key, &args, target).await
        })
        .await?;
    Ok(text(format!(
        "Deployed {} to {target} (ticket {ticket}).",
        args.service
    )))
}

/// The side effect: a change ticket from the webhook when one is
/// configured, otherwise an id derived from the request. `cx.once` makes
/// sure a replay never opens a second ticket; the idempotency key lets the
/// webhook recognize a retry after a crash in the middle of the POST.
async fn open_ticket(
    webhook: Option<String>,
    key: &str,
    args: &DeployArgs,
    target: &str,
) -> Result<String, ToolError> {
    match webhook {
        Some(url) => {
            let body = json!({"service": args.service, "target": target});
            let headers = [("idempotency-key", key)];
            let answer = durable_mcp::outbound::post_json(&url, &body, &headers).await?;
            answer["ticket"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| ToolError::failed("the ticket webhook answered without a ticket"))
        }
        None => Ok(format!(
            "CHG-{}",
            digest_json(&json!([args.service, target]))[..8].to_uppercase()
        )),
    }
}

/// Adds two numbers.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

async fn add(_: &mut Cx, args: AddArgs) -> Result<Json<Sum>, ToolError> {
    Ok(Json(Sum {
        sum: args.a + args.b,
    }))
}
