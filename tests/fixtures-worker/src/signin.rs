//! Tools for the sign-in tests: who is calling, and a durable call that
//! steps up to a wider scope in its second round.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use durable_mcp::{text, CallToolResult, Cx, Elicitation, Registry, Tool, ToolError};

/// Registers `whoami` and `release`.
pub(crate) fn register(r: &mut Registry) {
    r.tool(Tool::new("whoami", whoami).title("Who is calling"));
    r.tool(
        Tool::new("release", release)
            .title("Release a build (asks, then needs release:write)")
            .durable(),
    );
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Says who the server thinks is calling.
async fn whoami(cx: &mut Cx, _: NoArgs) -> Result<CallToolResult, ToolError> {
    let c = cx.caller();
    // As JSON text, so any client reads it the same way.
    Ok(text(
        json!({
            "subject": c.subject,
            "clientId": c.client_id,
            "scopes": c.scopes,
            "issuer": c.issuer,
            "claims": c.claims,
        })
        .to_string(),
    ))
}

/// What to release.
#[derive(Deserialize, JsonSchema)]
struct ReleaseArgs {
    /// The build to release
    build: String,
}

/// The confirmation form.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Release it?
    confirm: bool,
}

/// Asks for confirmation, then (a later round) needs `release:write`:
/// a token without it is sent to step up, and the same retry goes on.
async fn release(cx: &mut Cx, args: ReleaseArgs) -> Result<CallToolResult, ToolError> {
    let answer = cx
        .elicit::<Confirm>("confirm", format!("Release {}?", args.build))
        .await?;
    if !matches!(answer, Elicitation::Accepted(Confirm { confirm: true })) {
        return Ok(text(format!("{} not released.", args.build)));
    }
    cx.require_scopes(["release:write"])?;
    let who = cx.caller().subject;
    let key = cx.idempotency_key("release");
    let id: String = cx.once("release", async || Ok(key)).await?;
    Ok(text(format!("Released {} for {who} ({id}).", args.build)))
}
