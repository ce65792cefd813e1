//! Tool chaining fixtures (seed 004) for the e2e tests of clients: a chain
//! that loops, one that never ends, a valid one, and two the runtime must
//! refuse (an unlisted next tool, arguments that do not fit).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use durable_mcp::{text, CallToolResult, Cx, Registry, Tool, ToolError};

type Out = Result<CallToolResult, ToolError>;

/// Registers the chain fixtures.
pub(crate) fn register(r: &mut Registry) {
    r.tool(Tool::new("chain_loop", chain_loop));
    r.tool(Tool::new("chain_step", chain_step));
    r.tool(Tool::new("chain_start", chain_start));
    r.tool(Tool::new("chain_to_unlisted", chain_to_unlisted));
    r.tool(
        Tool::new("chain_bad_arguments", chain_bad_arguments)
            .description("Names greet with arguments its schema refuses (the runtime refuses it)."),
    );
}

/// Names itself, with the same arguments, as the next tool: a cycle.
#[derive(Deserialize, JsonSchema)]
struct LoopArgs {
    /// Anything.
    #[serde(default)]
    note: Option<String>,
}

async fn chain_loop(_: &mut Cx, a: LoopArgs) -> Out {
    Ok(text("looping").with_next_tool("chain_loop", json!({ "note": a.note })))
}

/// Names `chain_step` with `n + 1`: a chain that never ends.
#[derive(Deserialize, JsonSchema)]
struct StepArgs {
    /// The step number.
    n: u32,
}

async fn chain_step(_: &mut Cx, a: StepArgs) -> Out {
    Ok(text(format!("step {}", a.n)).with_next_tool("chain_step", json!({"n": a.n + 1})))
}

/// Starts a valid two-call chain: `greet` comes next.
#[derive(Deserialize, JsonSchema)]
struct StartArgs {
    /// Who `greet` greets.
    name: String,
}

async fn chain_start(_: &mut Cx, a: StartArgs) -> Out {
    Ok(text("starting").with_next_tool("greet", json!({ "name": a.name })))
}

/// Names a tool the server does not list (the runtime refuses it).
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

async fn chain_to_unlisted(_: &mut Cx, _: NoArgs) -> Out {
    Ok(text("next: nowhere").with_next_tool("no_such_tool", json!({})))
}

/// Names `greet` with arguments its schema refuses (the runtime refuses it).
async fn chain_bad_arguments(_: &mut Cx, _: NoArgs) -> Out {
    Ok(text("next: greet, badly").with_next_tool("greet", json!({"name": 5})))
}
