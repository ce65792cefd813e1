//! The `deploy` tool both versions of the user's worker serve, one copy per
//! case, each built from a `Shape`: what that version's code does. v1 and
//! v2 (`lib.rs`) differ only in the shapes they register, so a case's
//! change between the two versions is the one field its v2 shape sets.
//!
//! Like the quickstart's deploy: a form under key `target` ("Where should
//! <service> be deployed?"), a sampling under key `verdict`, a change
//! ticket opened once (`cx.once("ticket")`, a POST to the test's webhook at
//! `TICKET_WEBHOOK/<service>`, so the test counts each call's effects),
//! then "Deployed <service> to <target> (ticket <ticket>)."
//!
//! Each shape is registered three times, one per kind of call:
//! - `<case>`: durable (`Tool::durable`), for durable MRTR, the saga
//!   methods, the streamless sketch and the session wire;
//! - `<case>_plain`: stateless MRTR, whose `requestState` is the journal
//!   (no `cx.once` there: the ticket is made up, `LOCAL`);
//! - `<case>_task`: a task (`Tool::task`).

use std::time::Duration;

use durable_mcp::{ask, form, outbound, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

/// What the tools share, read from the Worker's vars.
pub struct Settings {
    /// Where change tickets are opened (`TICKET_WEBHOOK`).
    pub webhook: Option<String>,
}

/// One version of the tool's code.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The form's key (v1: "target").
    pub ask_key: &'static str,
    /// The form's message reworded.
    pub reworded: bool,
    /// An optional field (`note`) added to the form.
    pub optional_field: bool,
    /// A required field (`approver`) added to the form.
    pub required_field: bool,
    /// A `confirm` form inserted before the sampling.
    pub confirm: bool,
    /// The sampling step (`verdict`).
    pub sample: bool,
    /// The ticket opened right after the form, before the sampling (a call
    /// paused at the sampling then holds a recorded `once`).
    pub once_early: bool,
    /// The `cx.once` key (v1: "ticket").
    pub once_key: &'static str,
    /// The effect's output read as a number (v1: the ticket, a string).
    pub once_number: bool,
    /// `cx.sleep("wait", …)` after the ticket, this long.
    pub sleep: Option<Duration>,
}

/// How long v1's sleepers wait. In a task it is a real wait (its alarm):
/// long enough to stop v1 and start v2 while the task sleeps.
pub const WAIT: Duration = Duration::from_secs(15);

impl Shape {
    /// The quickstart's deploy.
    pub const fn v1() -> Self {
        Shape {
            ask_key: "target",
            reworded: false,
            optional_field: false,
            required_field: false,
            confirm: false,
            sample: true,
            once_early: false,
            once_key: "ticket",
            once_number: false,
            sleep: None,
        }
    }

    /// The variant that opens its ticket before the sampling.
    pub const fn early() -> Self {
        Shape {
            once_early: true,
            ..Shape::v1()
        }
    }

    /// The variant that waits after the ticket.
    pub const fn sleeper() -> Self {
        Shape {
            sleep: Some(WAIT),
            ..Shape::v1()
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Durable,
    Plain,
    Task,
}

/// Registers `shape` as `<name>`, `<name>_plain` and `<name>_task`.
pub fn register(r: &mut Registry, name: &str, shape: Shape, version: &str) {
    for (suffix, kind) in [
        ("", Kind::Durable),
        ("_plain", Kind::Plain),
        ("_task", Kind::Task),
    ] {
        r.tool(tool(
            &format!("{name}{suffix}"),
            shape.clone(),
            kind,
            version,
        ));
    }
}

fn form_schema(shape: &Shape) -> Value {
    let mut properties = json!({
        "target": {"type": "string", "title": "Target", "description": "Where to deploy",
                   "enum": ["staging", "production"]},
    });
    let mut required = vec!["target"];
    if shape.optional_field {
        properties["note"] = json!({"type": "string", "description": "A note for the change log"});
    }
    if shape.required_field {
        properties["approver"] = json!({"type": "string", "description": "Who approved it"});
        required.push("approver");
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Opens the change ticket once (the durable and task kinds), or makes one
/// up (a stateless call cannot `once`).
async fn ticket(
    cx: &Cx,
    shape: &Shape,
    kind: Kind,
    service: &str,
    target: &str,
) -> Result<String, ToolError> {
    if kind == Kind::Plain {
        return Ok("LOCAL".to_string());
    }
    let webhook = cx.state::<Settings>()?.webhook.clone();
    let key = cx.idempotency_key(shape.once_key);
    let post = async move || -> Result<String, ToolError> {
        let url = webhook.ok_or_else(|| ToolError::failed("TICKET_WEBHOOK is not set"))?;
        let body = json!({"service": service, "target": target});
        let answer = outbound::post_json(
            &format!("{url}/{service}"),
            &body,
            &[("idempotency-key", &key)],
        )
        .await?;
        answer["ticket"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ToolError::failed("the webhook answered without a ticket"))
    };
    if shape.once_number {
        // v2 of once_type_changed: the effect's output is now the ticket's
        // number.
        let n: u64 = cx
            .once(shape.once_key, async || {
                let t = post().await?;
                Ok(t.trim_start_matches("T-").parse().unwrap_or(0))
            })
            .await?;
        return Ok(format!("T-{n}"));
    }
    cx.once(shape.once_key, post).await
}

fn tool(name: &str, shape: Shape, kind: Kind, version: &str) -> Tool {
    let handler = async move |cx: &mut Cx, args: Value| -> Result<CallToolResult, ToolError> {
        let service = args["service"].as_str().unwrap_or("?").to_string();
        let message = if shape.reworded {
            format!("Pick the environment {service} goes to.")
        } else {
            format!("Where should {service} be deployed?")
        };
        let answer = cx
            .elicit_with(shape.ask_key, form(message, form_schema(&shape)))
            .await?;
        if !answer.accepted() {
            return Ok(text(format!("Deployment of {service} cancelled.")));
        }
        let target = answer
            .field::<String>("target")
            .unwrap_or_else(|| "?".into());
        let mut opened = None;
        if shape.once_early {
            opened = Some(ticket(cx, &shape, kind, &service, &target).await?);
        }
        if shape.confirm {
            let ok = cx
                .elicit_with(
                    "confirm",
                    form(
                        format!("Deploy {service} to {target}?"),
                        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
                    ),
                )
                .await?;
            if ok.field::<bool>("ok") != Some(true) {
                return Ok(text(format!("Deployment of {service} not confirmed.")));
            }
        }
        if shape.sample {
            let verdict = cx
                .sample(
                    "verdict",
                    ask(format!("Is it safe to deploy {service} to {target} right now? Answer yes or no."), 50),
                )
                .await?;
            if !verdict.text().to_ascii_lowercase().contains("yes") {
                return Ok(text(format!("Not deploying {service} to {target}.")));
            }
        }
        let ticket = match opened {
            Some(t) => t,
            None => ticket(cx, &shape, kind, &service, &target).await?,
        };
        if let Some(wait) = shape.sleep {
            cx.status(format!("waiting before deploying {service}"));
            cx.sleep("wait", wait).await?;
        }
        Ok(text(format!(
            "Deployed {service} to {target} (ticket {ticket})."
        )))
    };
    let schema = json!({
        "type": "object",
        "properties": {"service": {"type": "string", "description": "The service to deploy"}},
        "required": ["service"],
    });
    let tool = Tool::new(name, handler)
        .description("Deploys a service: asks where, checks with the model, opens a ticket once.")
        .input_schema(schema)
        .version(version);
    match kind {
        Kind::Durable => tool.durable(),
        Kind::Plain => tool,
        Kind::Task => tool.task(),
    }
}
