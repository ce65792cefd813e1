//! v3 of the user's worker (tests/e2e/pinning.test.mjs): `deploy`, version
//! "3", pinned, its body v2's; it no longer keeps v1's body (the calls
//! still on it park, naming version 1, until a deploy brings it back) and
//! keeps v2's for the calls paused on v2 (a pinned call's version is the
//! one its last round ran on: without `.keeps("2", …)` they would park
//! too). `deploy_moving` is not served.

mod common;

use common::{choice, effect, register, Args, Kind, Settings};
use durable_mcp::{ask, form, text, Bindings, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::json;

/// v2's body, unchanged: v3's current body, and the one kept for version 2.
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

pub fn server(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(Settings {
        webhook: env.var("TICKET_WEBHOOK"),
    });
    register(&mut r, "deploy", |name, kind| {
        Tool::new(name, async move |cx: &mut Cx, a: Args| {
            deploy_v2(cx, a, kind).await
        })
        .version("3")
        .keeps("2", async move |cx: &mut Cx, a: Args| {
            deploy_v2(cx, a, kind).await
        })
        .pinned()
    });
    r
}

durable_mcp::entry!(server);
