//! The conformance suite's tasks-extension fixtures (SEP-2663): `greet`
//! (never a task), `slow_compute`, `failing_job`, `protocol_error_job`,
//! `confirm_delete`, `multi_input`, `test_tool_with_task`; plus
//! `count_slowly`, the e2e tests' long task with a side effect that must run
//! once across a restart.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use durable_mcp::{text, CallToolResult, Cx, Elicitation, McpError, Registry, Tool, ToolError};

use crate::examples::Settings;

type Out = Result<CallToolResult, ToolError>;

/// Registers the task fixtures.
pub(crate) fn register(r: &mut Registry) {
    r.tool(Tool::new("greet", greet));
    r.tool(Tool::new("slow_compute", slow_compute).task());
    r.tool(Tool::new("failing_job", failing_job).task_only());
    r.tool(Tool::new("protocol_error_job", protocol_error_job).task());
    r.tool(Tool::new("confirm_delete", confirm_delete).task());
    r.tool(Tool::new("multi_input", multi_input).task());
    r.tool(
        Tool::new("test_tool_with_task", tool_with_task)
            .task()
            .input_before_task(),
    );
    r.tool(Tool::new("count_slowly", count_slowly).task());
}

/// Greets someone (a plain tool: never a task).
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

async fn greet(_: &mut Cx, a: GreetArgs) -> Out {
    Ok(text(format!("Hello, {}!", a.name)))
}

/// Sleeps `seconds` seconds, then returns. As a task the sleep is the task
/// object's alarm; `seconds: 0` returns at once (no task).
#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds.
    seconds: u32,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

async fn slow_compute(cx: &mut Cx, a: SlowArgs) -> Out {
    if a.seconds > 0 {
        cx.status(format!("computing for {} s", a.seconds));
        cx.sleep("work", Duration::from_secs(a.seconds.into()))
            .await?;
    }
    let label = a.label.unwrap_or_default();
    Ok(text(format!(
        "Computed {label} after {} second(s).",
        a.seconds
    )))
}

/// Always fails with a tool error after about a second (task only).
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

async fn failing_job(cx: &mut Cx, _: NoArgs) -> Out {
    cx.sleep("work", Duration::from_secs(1)).await?;
    Err(ToolError::failed("the job failed, as it always does"))
}

/// Fails with a protocol (JSON-RPC) error after about a second.
async fn protocol_error_job(cx: &mut Cx, _: NoArgs) -> Out {
    cx.sleep("work", Duration::from_secs(1)).await?;
    Err(McpError::internal("the job hit an internal error").into())
}

/// Asks the user to confirm deleting a file, then says what it did.
#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

/// Confirm the deletion.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Delete it?
    confirm: bool,
}

async fn confirm_delete(cx: &mut Cx, a: DeleteArgs) -> Out {
    let message = format!("Delete {}?", a.filename);
    Ok(match cx.elicit::<Confirm>("confirm", message).await? {
        Elicitation::Accepted(Confirm { confirm: true }) => {
            text(format!("Deleted {}.", a.filename))
        }
        _ => text(format!("Kept {}.", a.filename)),
    })
}

/// Who and whether.
#[derive(Deserialize, JsonSchema)]
struct NameConfirm {
    /// A name.
    #[serde(default)]
    name: Option<String>,
    /// Go ahead?
    #[serde(default)]
    confirm: Option<bool>,
}

/// Asks two questions at once; finishes when both are answered.
async fn multi_input(cx: &mut Cx, _: NoArgs) -> Out {
    let first = cx.elicit::<NameConfirm>("first", "First input?");
    let second = cx.elicit::<NameConfirm>("second", "Second input?");
    let (a, b) = (first.await?, second.await?);
    let name = |e: Elicitation<NameConfirm>| match e {
        Elicitation::Accepted(v) if v.confirm != Some(false) => v.name.unwrap_or_default(),
        _ => "-".into(),
    };
    Ok(text(format!("Got {} and {}.", name(a), name(b))))
}

/// What to call you.
#[derive(Deserialize, JsonSchema)]
struct UserName {
    /// Your name.
    name: String,
}

/// Asks the user's name over MRTR, then becomes a task that greets them.
async fn tool_with_task(cx: &mut Cx, _: NoArgs) -> Out {
    let name = match cx
        .elicit::<UserName>("user_name", "What is your name?")
        .await?
    {
        Elicitation::Accepted(u) => u.name,
        _ => "stranger".into(),
    };
    cx.detach("work").await?;
    cx.sleep("think", Duration::from_millis(300)).await?;
    Ok(text(format!("Hello, {name}, from a task.")))
}

/// Counts to `to`, one step per `step_ms`, reporting its progress as the
/// task's status; then records the count once at the ticket webhook (the
/// e2e tests' restart check: the side effect must run exactly once).
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How far to count.
    to: u32,
    /// Milliseconds per step.
    step_ms: u64,
}

async fn count_slowly(cx: &mut Cx, a: CountArgs) -> Out {
    for i in 1..=a.to {
        cx.status(format!("step {i} of {}", a.to));
        cx.sleep(&format!("step-{i}"), Duration::from_millis(a.step_ms))
            .await?;
    }
    let key = cx.idempotency_key("record");
    let webhook = cx.state::<Settings>()?.ticket_webhook.clone();
    let recorded: Value = cx
        .once("record", async || match webhook {
            Some(url) => {
                let body = json!({"count": a.to, "idempotencyKey": key});
                durable_mcp::outbound::post_json(&url, &body, &[("idempotency-key", &key)]).await
            }
            None => Ok(json!({"recorded": false})),
        })
        .await?;
    Ok(text(format!("Counted to {}; recorded {recorded}.", a.to)))
}
