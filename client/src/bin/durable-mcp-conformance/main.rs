//! `durable-mcp-conformance`: the client the official MCP conformance suite
//! drives (`conformance client --command …`). The suite starts a server for
//! one scenario and runs `durable-mcp-conformance <server-url>` with
//!
//! - `MCP_CONFORMANCE_SCENARIO`: the scenario's name;
//! - `MCP_CONFORMANCE_PROTOCOL_VERSION`: the protocol version it runs at
//!   (2026-07-28 on the stateless wire, the dated ones in a session);
//! - `MCP_CONFORMANCE_CONTEXT`: JSON the scenario hands the client (the
//!   tool calls to make, client credentials), when it has any.
//!
//! Each scenario is performed through `durable_mcp_client`, as any user of
//! the crate would: `auth/*` in `auth.rs`, the rest in `scenarios.rs`.
//! Exits 0 when the scenario ran to its end, 1 with the reason on stderr
//! when it did not, 64 on a usage error. Whether the client behaved is the
//! suite's verdict, not this program's.

mod auth;
mod scenarios;

use std::process::ExitCode;

use serde_json::Value;

/// The version the suite uses when it sets none.
const DEFAULT_VERSION: &str = "2025-11-25";

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!(
            "usage: durable-mcp-conformance <server-url> (with MCP_CONFORMANCE_SCENARIO set)"
        );
        return ExitCode::from(64);
    };
    let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") else {
        eprintln!("MCP_CONFORMANCE_SCENARIO is not set");
        return ExitCode::from(64);
    };
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_VERSION.to_string());
    let context = match context() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(64);
        }
    };
    let outcome = if scenario.starts_with("auth/") {
        auth::run(&scenario, &url, &context)
    } else {
        scenarios::run(&scenario, &url, &version, &context)
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `MCP_CONFORMANCE_CONTEXT`, parsed; `null` when unset.
fn context() -> Result<Value, String> {
    match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
            .map_err(|e| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}")),
        _ => Ok(Value::Null),
    }
}
