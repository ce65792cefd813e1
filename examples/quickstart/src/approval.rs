//! `promote`: promoting a service to production needs a person's approval,
//! given on a page this worker serves (`/approve`), not in the chat. The
//! tool sends the user there (URL-mode elicitation) and waits — for days if
//! need be, across restarts and deploys — until the page's form is posted.

use durable_mcp::{text, CallToolResult, Cx, Page, PageReply, ToolError, UrlElicitation};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Promotes a service to production once someone approves it on the
/// approval page.
#[derive(Deserialize, JsonSchema)]
pub struct PromoteArgs {
    /// The service to promote.
    pub service: String,
}

/// The tool: waits for the approval page, then reports who approved.
pub async fn promote(cx: &mut Cx, args: PromoteArgs) -> Result<CallToolResult, ToolError> {
    // The page shows what is approved from the paused call itself: the
    // service and the action travel with the question, not in the link.
    let approval = cx
        .elicit_url_showing(
            "approval",
            format!("Approve promoting {} to production", args.service),
            "/approve",
            json!({ "service": args.service, "action": "promote to production" }),
        )
        .await?;
    Ok(text(match approval {
        UrlElicitation::Completed(c) => {
            let note: String = c.field("note").unwrap_or_default();
            format!(
                "Promoted {} to production (approved{}).",
                args.service,
                if note.is_empty() {
                    String::new()
                } else {
                    format!(": {note}")
                }
            )
        }
        UrlElicitation::Declined | UrlElicitation::Cancelled => {
            format!("{} stays where it is: not approved.", args.service)
        }
    }))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The approval page: what the link's approval is for (the service and the
/// action, read from the paused call, so an edited link cannot change
/// them) and a form; posting it completes that approval, and the paused
/// `promote` goes on.
pub fn approve_page(page: &Page) -> PageReply {
    let (Some(id), Some(question)) = (page.elicitation(), page.question()) else {
        return PageReply::html(
            "<!doctype html><title>Approval</title><p>This approval link is not valid, or not yours.</p>",
        )
        .status(404);
    };
    if page.method == "POST" {
        return PageReply::html(
            "<!doctype html><title>Approved</title><p>Approved. You can close this tab.</p>",
        )
        .complete([("note", page.field("note").unwrap_or_default())]);
    }
    let service = question.detail("service").unwrap_or("(unknown)");
    let action = question.detail("action").unwrap_or("(unknown)");
    PageReply::html(format!(
        "<!doctype html><title>Approve promotion</title>\
         <h1>{}</h1>\
         <dl><dt>Service</dt><dd id=service>{}</dd><dt>Action</dt><dd id=action>{}</dd></dl>\
         <form method=post action=/approve>\
         <input type=hidden name=elicitationId value=\"{}\">\
         <label>Note <input name=note></label> <button>Approve</button></form>",
        escape(&question.message),
        escape(service),
        escape(action),
        escape(id)
    ))
}
