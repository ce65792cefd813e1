//! v1 of the user's worker (tests/e2e/pinning.test.mjs): `deploy`, version
//! "1", pinned: asks where (a form, `target`), opens a change ticket once
//! (`cx.once("ticket")`), asks the model whether it is safe (a sampling,
//! `verdict`), and answers "v1 deployed …". `deploy_moving`: the same,
//! with an upgrade point after the form (nothing, while v1 is current).

mod common;

use common::{choice, effect, register, Args, Kind, Settings};
use durable_mcp::{ask, form, Bindings, Cx, Registry, Tool, ToolError};
use serde_json::json;

/// v1's body.
pub async fn deploy_v1(cx: &mut Cx, a: Args, kind: Kind) -> Result<String, ToolError> {
    let service = a.service;
    let answer = cx
        .elicit_with(
            "target",
            form(
                format!("Where should {service} be deployed?"),
                choice("target", &["staging", "production"]),
            ),
        )
        .await?;
    let target = answer
        .field::<String>("target")
        .unwrap_or_else(|| "?".into());
    let ticket = effect(cx, kind, "ticket", &service, json!({"target": target})).await?;
    let verdict = cx
        .sample(
            "verdict",
            ask(
                format!("Is it safe to deploy {service} to {target} right now? Answer yes or no."),
                50,
            ),
        )
        .await?;
    let verdict = if verdict.text().to_ascii_lowercase().contains("yes") {
        "safe"
    } else {
        "unsafe"
    };
    Ok(format!(
        "v1 deployed {service} to {target} (ticket {ticket}, verdict {verdict})."
    ))
}

/// v1's body of `deploy_moving`: the calls that answered the form may
/// finish on a later version's body (`cx.upgrade_point`).
pub async fn deploy_moving_v1(cx: &mut Cx, a: Args, kind: Kind) -> Result<String, ToolError> {
    let service = a.service;
    let answer = cx
        .elicit_with(
            "target",
            form(
                format!("Where should {service} be deployed?"),
                choice("target", &["staging", "production"]),
            ),
        )
        .await?;
    let target = answer
        .field::<String>("target")
        .unwrap_or_else(|| "?".into());
    cx.upgrade_point("after-form")?;
    let verdict = cx
        .sample(
            "verdict",
            ask(
                format!("Is it safe to deploy {service} to {target} right now? Answer yes or no."),
                50,
            ),
        )
        .await?;
    let verdict = if verdict.text().to_ascii_lowercase().contains("yes") {
        "safe"
    } else {
        "unsafe"
    };
    let ticket = effect(cx, kind, "ticket", &service, json!({"target": target})).await?;
    Ok(format!(
        "v1 deployed {service} to {target} (ticket {ticket}, verdict {verdict})."
    ))
}

pub fn server(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(Settings {
        webhook: env.var("TICKET_WEBHOOK"),
    });
    register(&mut r, "deploy", |name, kind| {
        Tool::new(name, async move |cx: &mut Cx, a: Args| {
            deploy_v1(cx, a, kind).await
        })
        .version("1")
        .pinned()
    });
    register(&mut r, "deploy_moving", |name, kind| {
        Tool::new(name, async move |cx: &mut Cx, a: Args| {
            deploy_moving_v1(cx, a, kind).await
        })
        .version("1")
        .pinned()
    });
    r
}

durable_mcp::entry!(server);
