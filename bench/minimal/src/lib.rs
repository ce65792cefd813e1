//! The smallest worker durable-mcp makes: one stateless tool, no skill, no
//! page, no view, no durable or task tool, no optional feature. What its
//! wasm weighs and how fast it starts is what every durable-mcp worker pays
//! before its own tools: both protocol eras, sessions, tasks, the Durable
//! Object and the sign-in modes are chosen by configuration at run time, so
//! they are linked into every worker (`docs/PERFORMANCE.md`, "Wasm size").

use durable_mcp::{Bindings, Cx, Registry, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Adds two numbers.
#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first number.
    pub a: f64,
    /// The second number.
    pub b: f64,
}

async fn add(_: &mut Cx, args: AddArgs) -> Result<String, ToolError> {
    Ok((args.a + args.b).to_string())
}

/// The server: the one tool.
pub fn server(_: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.tool(Tool::new("add", add));
    r
}

durable_mcp::entry!(server);

#[cfg(test)]
mod tests {
    use durable_mcp::testing::TestServer;
    use serde_json::json;

    use super::*;

    #[test]
    fn it_adds() {
        let mut s = TestServer::new(server(&Bindings::from_vars([("A", "")])));
        let r = s.call_tool("add", json!({"a": 1, "b": 2}), json!({}));
        assert_eq!(r.json["result"]["content"][0]["text"], "3", "{}", r.json);
    }
}
