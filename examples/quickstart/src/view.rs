//! The view of `deploy`'s result (MCP Apps): a card that hosts speaking the
//! extension show in place of the text, drawn from the call's structured
//! output. The page is one self-contained file, bundled at compile time.

use durable_mcp::{text, CallToolResult, ToolError, View};
use schemars::JsonSchema;
use serde::Serialize;

/// Where the view is served; `deploy` names it.
pub const DEPLOY_VIEW: &str = "ui://quickstart/deploy.html";

/// The view: `ui/deploy.html`, with no origin to reach (the host's
/// strictest policy applies, and the page needs nothing more).
pub fn deploy_view() -> View {
    View::new(DEPLOY_VIEW, "deployment", include_str!("../ui/deploy.html"))
        .title("Deployment")
        .description("The outcome of a deploy call: the service, where it went, its change ticket.")
        .prefers_border(true)
}

/// How a deployment ended.
#[derive(Serialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeployStatus {
    /// It is out, with a change ticket.
    Deployed,
    /// The user cancelled the form.
    Cancelled,
    /// The model said it was not a good time.
    Refused,
}

/// What became of a deployment: `deploy`'s structured output, and what its
/// view draws.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// The service.
    pub service: String,
    /// How it ended.
    pub status: DeployStatus,
    /// Where it was to go, once the user said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The change ticket, once deployed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// The model's answer, when it said no.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Deployment {
    /// The user cancelled before saying where.
    pub fn cancelled(service: &str) -> Self {
        Self {
            service: service.into(),
            status: DeployStatus::Cancelled,
            target: None,
            ticket: None,
            reason: None,
        }
    }

    /// The model answered `reason` rather than yes.
    pub fn refused(service: &str, target: &str, reason: &str) -> Self {
        Self {
            target: Some(target.into()),
            reason: Some(reason.into()),
            status: DeployStatus::Refused,
            ..Self::cancelled(service)
        }
    }

    /// Out, under change ticket `ticket`.
    pub fn deployed(service: &str, target: &str, ticket: &str) -> Self {
        Self {
            target: Some(target.into()),
            ticket: Some(ticket.into()),
            status: DeployStatus::Deployed,
            ..Self::cancelled(service)
        }
    }

    /// The call's result: `message` for the model (and for hosts without
    /// views), this deployment as `structuredContent` for the view.
    pub fn answer(&self, message: String) -> Result<CallToolResult, ToolError> {
        Ok(text(message).with_structured(serde_json::to_value(self)?))
    }
}
