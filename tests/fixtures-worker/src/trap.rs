//! `trap` and `trap_durable`, served only with `TRAP_TOOLS` set: tools that
//! panic, which in wasm is a trap (`unreachable`), for the test that the
//! Worker and its objects serve the next request after one.

use durable_mcp::{CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::Value;

/// Registers the tools that trap.
pub(crate) fn register(r: &mut Registry) {
    r.tool(Tool::new("trap", trap).title("Trap (a test of recovery)"));
    r.tool(
        Tool::new("trap_durable", trap)
            .title("Trap in an object (a test of recovery)")
            .durable(),
    );
}

#[allow(clippy::panic)]
async fn trap(_: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    panic!("the trap tool traps, as it was asked to")
}
