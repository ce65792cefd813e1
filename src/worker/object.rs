//! The `McpObject` Durable Object class.

use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

/// One instance per paused call (durable mode) or per 2025 session.
#[durable_object]
pub struct McpObject {
    #[allow(dead_code)]
    state: State,
    #[allow(dead_code)]
    env: Env,
}

impl DurableObject for McpObject {
    fn new(state: State, env: Env) -> Self {
        Self { state, env }
    }

    async fn fetch(&self, _req: Request) -> Result<Response> {
        Response::error("not found", 404)
    }
}
