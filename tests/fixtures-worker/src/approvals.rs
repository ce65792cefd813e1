//! `file_change`: a durable tool whose effect's output is made of the
//! user's answer, and which pauses after it — the call an operator's
//! export must carry without showing either (the e2e operator-surface
//! test greps the export for both).

use schemars::JsonSchema;
use serde::Deserialize;

use durable_mcp::{text, CallToolResult, Cx, Elicitation, Registry, Tool, ToolError};

/// Registers `file_change`.
pub(crate) fn register(r: &mut Registry) {
    r.tool(
        Tool::new("file_change", file_change)
            .title("File a change request, then approve it")
            .durable(),
    );
}

/// What to change.
#[derive(Deserialize, JsonSchema)]
struct ChangeArgs {
    /// The system to change
    system: String,
}

/// Why the change is needed.
#[derive(Deserialize, JsonSchema)]
struct Reason {
    /// The reason
    reason: String,
}

/// Approve it?
#[derive(Deserialize, JsonSchema)]
struct Approve {
    /// Approve the change
    approve: bool,
}

/// Asks why, files the change (once: its record quotes the reason), then
/// asks for approval.
async fn file_change(cx: &mut Cx, args: ChangeArgs) -> Result<CallToolResult, ToolError> {
    let Elicitation::Accepted(Reason { reason }) = cx
        .elicit::<Reason>("reason", format!("Why change {}?", args.system))
        .await?
    else {
        return Ok(text("No change filed."));
    };
    let record: String = cx
        .once("file", async || Ok(format!("change filed: {reason}")))
        .await?;
    let approved = matches!(
        cx.elicit::<Approve>("approve", "Approve the change?")
            .await?,
        Elicitation::Accepted(Approve { approve: true })
    );
    Ok(text(format!("{record} (approved: {approved})")))
}
