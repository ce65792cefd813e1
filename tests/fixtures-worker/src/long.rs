//! Long calls (issue 42: storage that grows with the work): an agent loop
//! that asks the client's model many times (`long_talk`, and as a task;
//! bench/growth.mjs and tests/e2e/long.test.mjs drive it), and a call whose
//! effects record large outputs, each run counted at the ticket webhook.

use durable_mcp::{ask, form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::examples::Settings;

pub(crate) fn register(r: &mut Registry) {
    r.tool(
        Tool::new("long_talk", long_talk)
            .title("Ask the client's model many times")
            .durable(),
    );
    r.tool(
        Tool::new("long_talk_task", long_talk)
            .title("long_talk, as a task")
            .task(),
    );
    r.tool(
        Tool::new("hoard", hoard)
            .title("Record large effect outputs between two questions")
            .durable(),
    );
    r.tool(
        Tool::new("hoard_task", hoard)
            .title("hoard, as a task")
            .task(),
    );
}

/// How long a conversation.
#[derive(Deserialize, JsonSchema)]
struct TalkArgs {
    /// How many times to ask
    rounds: u32,
}

async fn long_talk(cx: &mut Cx, args: TalkArgs) -> Result<CallToolResult, ToolError> {
    let mut total = 0;
    for i in 0..args.rounds {
        let r = cx.sample(&format!("s{i}"), ask("go on", 10)).await?;
        total += r.text().len();
    }
    Ok(text(format!("{} rounds, {total} bytes", args.rounds)))
}

/// What to record.
#[derive(Deserialize, JsonSchema)]
struct HoardArgs {
    /// Names the webhook's records of this call
    tag: String,
    /// How many effects
    count: u32,
    /// The bytes of each one's output
    bytes: usize,
}

async fn hoard(cx: &mut Cx, args: HoardArgs) -> Result<CallToolResult, ToolError> {
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    cx.elicit_with("start", form("Start?", schema.clone()))
        .await?;
    let webhook = cx.state::<Settings>()?.ticket_webhook.clone();
    let mut total = 0;
    for i in 0..args.count {
        let key = cx.idempotency_key(&format!("e{i}"));
        let out: String = cx
            .once(&format!("e{i}"), async || {
                if let Some(url) = &webhook {
                    let body = json!({"service": args.tag, "effect": i});
                    durable_mcp::outbound::post_json(url, &body, &[("idempotency-key", &key)])
                        .await?;
                }
                Ok("x".repeat(args.bytes))
            })
            .await?;
        total += out.len();
    }
    // Asked after the effects: their outputs are kept with the pause.
    cx.elicit_with("finish", form("Finish?", schema)).await?;
    Ok(text(format!("{total} bytes of outputs")))
}
