//! What every version of the user's worker shares (tests/e2e/pinning.test.mjs):
//! the tools' arguments, the webhook their effects go to, and how a tool is
//! registered once per kind of call. Each version's `lib.rs` has the bodies
//! it serves, as a user's code would: v2 keeps a copy of v1's.

use durable_mcp::{outbound, Cx, Registry, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// What the tools share, read from the Worker's vars.
pub struct Settings {
    /// Where effects go (`TICKET_WEBHOOK`): `<webhook>/<what>/<service>`.
    pub webhook: Option<String>,
}

/// A `deploy` call's arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    /// The service to deploy (each test call has its own).
    pub service: String,
}

/// The kind of call a registration serves.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    /// `Tool::durable`: durable MRTR, the saga methods, the streamless
    /// sketch, the session wire.
    Durable,
    /// Stateless MRTR: the `requestState` is the journal; no `cx.once`.
    Plain,
    /// `Tool::task`.
    Task,
}

/// Registers `make(kind)` as `<name>`, `<name>_plain` and `<name>_task`
/// (`make` names the tool as it is given).
pub fn register(r: &mut Registry, name: &str, make: impl Fn(&str, Kind) -> Tool) {
    for (suffix, kind) in [
        ("", Kind::Durable),
        ("_plain", Kind::Plain),
        ("_task", Kind::Task),
    ] {
        let tool = make(&format!("{name}{suffix}"), kind).description(
            "Deploys a service, asking the user and the model, with an effect run once.",
        );
        r.tool(match kind {
            Kind::Durable => tool.durable(),
            Kind::Plain => tool,
            Kind::Task => tool.task(),
        });
    }
}

/// The effect `what` (a ticket, a page) for `service`, run once
/// (`cx.once(what)`): a POST to `<webhook>/<what>/<service>` whose answer
/// names it. A stateless call cannot `once`: it makes one up (`LOCAL`).
pub async fn effect(
    cx: &Cx,
    kind: Kind,
    what: &str,
    service: &str,
    body: Value,
) -> Result<String, ToolError> {
    if kind == Kind::Plain {
        return Ok("LOCAL".to_string());
    }
    let webhook = cx.state::<Settings>()?.webhook.clone();
    let key = cx.idempotency_key(what);
    let url = format!("{}/{what}/{service}", webhook.unwrap_or_default());
    cx.once(what, async move || -> Result<String, ToolError> {
        let answer = outbound::post_json(
            &url,
            &json!({"service": service, "what": body}),
            &[("idempotency-key", &key)],
        )
        .await?;
        answer["ticket"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ToolError::failed("the webhook answered without an id"))
    })
    .await
}

/// A one-field form with a choice.
pub fn choice(field: &str, options: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {field: {"type": "string", "enum": options}},
        "required": [field],
    })
}
