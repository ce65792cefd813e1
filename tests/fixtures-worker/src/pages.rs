//! URL-mode elicitation: `connect` sends the user to this worker's
//! `/connect` page and waits — across rounds, restarts and deploys — until
//! they approve there. The page records who approved and a third-party
//! token (here: what the form posts as `token`, standing in for one a real
//! page would get from an OAuth exchange): sealed, used by the tool, never
//! returned to the client.

use schemars::JsonSchema;
use serde::Deserialize;

use durable_mcp::UrlElicitation;
use durable_mcp::{text, CallToolResult, Cx, Page, PageReply, Registry, Tool, ToolError};

/// Registers `connect` and its page.
pub(crate) fn register(r: &mut Registry) {
    r.tool(
        Tool::new("connect", connect)
            .title("Connect a service (approved on this worker's page)")
            .durable(),
    );
    r.tool(
        Tool::new("sign_off", sign_off)
            .title("Have someone else sign off a change (on this worker's page)")
            .durable(),
    );
    r.page("/connect", connect_page);
}

/// What to sign off, and who signs.
#[derive(Deserialize, JsonSchema)]
struct SignOffArgs {
    /// The change
    change: String,
    /// Who signs it off (the principal they sign in as)
    approver: String,
}

/// Sends the approver their link (to the ticket webhook, standing in for
/// a chat message; once), then waits for them on `/connect`: only they
/// can complete it. Says who did.
async fn sign_off(cx: &mut Cx, args: SignOffArgs) -> Result<CallToolResult, ToolError> {
    let link = cx
        .elicitation_url("approve", "/connect", Some(&args.approver))
        .unwrap_or_default();
    let webhook = cx
        .state::<crate::examples::Settings>()?
        .ticket_webhook
        .clone();
    let to = args.approver.clone();
    cx.once("tell", async || match webhook {
        Some(url) => {
            let body = serde_json::json!({"to": to, "link": link});
            durable_mcp::outbound::post_json(&url, &body, &[]).await?;
            Ok(true)
        }
        None => Ok(false),
    })
    .await?;
    let asked = (
        format!("{} must sign off {}", args.approver, args.change),
        "/connect",
    );
    let outcome = cx
        .elicit_url_from("approve", &args.approver, asked, serde_json::Value::Null)
        .await?;
    let who = cx.answered_by("approve").unwrap_or_default();
    Ok(text(match outcome {
        UrlElicitation::Completed(_) => format!("{} signed off ({who})", args.change),
        _ => format!("{} not signed off", args.change),
    }))
}

/// What to connect.
#[derive(Deserialize, JsonSchema)]
struct ConnectArgs {
    /// The service to connect
    service: String,
}

/// Waits for the user's approval on `/connect`, then "uses" the token the
/// page got (its length is all it tells).
async fn connect(cx: &mut Cx, args: ConnectArgs) -> Result<CallToolResult, ToolError> {
    let outcome = cx
        .elicit_url(
            "approve",
            format!("Approve connecting {} on this server's page", args.service),
            "/connect",
        )
        .await?;
    Ok(text(match outcome {
        UrlElicitation::Completed(c) => {
            let approver: String = c.field("approver").unwrap_or_default();
            let token = c.secret("token").unwrap_or_default();
            format!(
                "Connected {} (approved by {approver}; a token of {} characters kept)",
                args.service,
                token.len()
            )
        }
        UrlElicitation::Declined => format!("{} not connected: declined.", args.service),
        UrlElicitation::Cancelled => format!("{} not connected: cancelled.", args.service),
    }))
}

/// The approval page: a form for the elicitation the link names while it
/// is waiting; its POST completes it. Once completed, the link (and a page
/// pass for it) opens nothing.
fn connect_page(page: &Page) -> PageReply {
    let Some(id) = page.elicitation().filter(|_| page.question().is_some()) else {
        return PageReply::html("<!doctype html><p>Nothing to approve here.</p>").status(404);
    };
    if page.method == "POST" {
        return match page.field("decision") {
            Some("approve") => {
                PageReply::html("<!doctype html><p>Approved. You can close this tab.</p>")
                    .complete([("approver", page.caller.subject.as_str())])
                    .secret("token", page.field("token").unwrap_or_default())
            }
            _ => PageReply::html("<!doctype html><p>Not approved.</p>"),
        };
    }
    PageReply::html(format!(
        "<!doctype html><title>Approve</title><form method=post action=/connect>\
         <input type=hidden name=elicitationId value=\"{id}\">\
         <input name=token value=\"\">\
         <button name=decision value=approve>Approve</button></form>"
    ))
}
