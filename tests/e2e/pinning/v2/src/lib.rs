//! v2 of the user's worker (tests/e2e/pinning.test.mjs): `deploy` changed
//! completely — it asks the model the risk first (a sampling, `risk`),
//! then the window (a form, `window`), pages the on-call once
//! (`cx.once("page")`, a new effect) and answers "v2 rolled … out" — with
//! version "2", pinned, keeping v1's body (`.keeps("1", …)`, a copy of
//! v1's code) for the calls that started on it. `deploy_moving`: asks the
//! form v1 asked first, then the risk, and pages; v1's kept body moves its
//! calls here at its upgrade point.

mod common;

use common::{choice, effect, register, Args, Kind, Settings};
use durable_mcp::{ask, form, text, Bindings, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::json;

/// v1's body, as v1 had it.
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

/// v2's body: other questions, in another order, another effect.
pub async fn deploy_v2(cx: &mut Cx, a: Args, kind: Kind) -> Result<CallToolResult, ToolError> {
    let service = a.service;
    let risk = cx
        .sample(
            "risk",
            ask(
                format!("How risky is rolling {service} out now? Answer low or high."),
                20,
            ),
        )
        .await?;
    let risk = if risk.text().to_ascii_lowercase().contains("high") {
        "high"
    } else {
        "low"
    };
    let answer = cx
        .elicit_with(
            "window",
            form(
                format!("In which window should {service} roll out (risk {risk})?"),
                choice("window", &["now", "tonight"]),
            ),
        )
        .await?;
    let window = answer
        .field::<String>("window")
        .unwrap_or_else(|| "?".into());
    let page = effect(
        cx,
        kind,
        "page",
        &service,
        json!({"window": window, "risk": risk}),
    )
    .await?;
    Ok(text(format!(
        "v2 rolled {service} out in the {window} window (risk {risk}, on-call page {page})."
    )))
}

/// v1's body of `deploy_moving`, as v1 had it: its calls move to v2's
/// body at the upgrade point.
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

/// v2's body of `deploy_moving`: v1's form first, asked the same way (a
/// moved call's recorded answer is used), then the risk, then a page.
pub async fn deploy_moving_v2(
    cx: &mut Cx,
    a: Args,
    kind: Kind,
) -> Result<CallToolResult, ToolError> {
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
    let risk = cx
        .sample(
            "risk",
            ask(
                format!("How risky is rolling {service} out now? Answer low or high."),
                20,
            ),
        )
        .await?;
    let risk = if risk.text().to_ascii_lowercase().contains("high") {
        "high"
    } else {
        "low"
    };
    let page = effect(
        cx,
        kind,
        "page",
        &service,
        json!({"target": target, "risk": risk}),
    )
    .await?;
    Ok(text(format!(
        "v2 rolled {service} out to {target} (risk {risk}, on-call page {page})."
    )))
}

pub fn server(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(Settings {
        webhook: env.var("TICKET_WEBHOOK"),
    });
    register(&mut r, "deploy", |name, kind| {
        Tool::new(name, async move |cx: &mut Cx, a: Args| {
            deploy_v2(cx, a, kind).await
        })
        .version("2")
        .keeps("1", async move |cx: &mut Cx, a: Args| {
            deploy_v1(cx, a, kind).await
        })
        .pinned()
    });
    register(&mut r, "deploy_moving", |name, kind| {
        Tool::new(name, async move |cx: &mut Cx, a: Args| {
            deploy_moving_v2(cx, a, kind).await
        })
        .version("2")
        .keeps("1", async move |cx: &mut Cx, a: Args| {
            deploy_moving_v1(cx, a, kind).await
        })
        .pinned()
    });
    r
}

durable_mcp::entry!(server);
