//! The benchmark's ceilings, built with the same toolchain as durable-mcp
//! (worker-build, wasm-bindgen, wasm-opt) and served by the same workerd:
//!
//! - `POST /rpc`: parses the JSON-RPC body and answers a fixed result —
//!   what any MCP server must at least do for a stateless call;
//! - `POST /do/<name>`: forwards to the Durable Object `<name>`, which
//!   writes one SQLite row and answers — what a durable round must at
//!   least do (the bench sends a fresh name, then the same name again).
//!
//! Nothing here is MCP; that is the point.

#[cfg(target_arch = "wasm32")]
mod glue {
    use serde_json::{json, Value};
    // The class's generated glue names `wasm_bindgen` unqualified.
    use worker::wasm_bindgen;
    use worker::{
        durable_object, event, Context, DurableObject, Env, Request, Response, Result, State,
    };

    #[event(fetch)]
    async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
        let path = req.path();
        if let Some(name) = path.strip_prefix("/do/") {
            let stub = env
                .durable_object("CEILING")?
                .id_from_name(name)?
                .get_stub()?;
            return stub.fetch_with_request(req).await;
        }
        let body: Value = req.json().await.unwrap_or(Value::Null);
        Response::from_json(&json!({
            "jsonrpc": "2.0",
            "id": body.get("id").cloned().unwrap_or(Value::Null),
            "result": {"resultType": "complete", "content": [{"type": "text", "text": "3"}]},
        }))
    }

    /// One SQLite write per request.
    #[durable_object]
    pub struct Ceiling {
        state: State,
    }

    impl DurableObject for Ceiling {
        fn new(state: State, _env: Env) -> Self {
            Self { state }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let body = req.text().await?;
            let sql = self.state.storage().sql();
            sql.exec(
                "CREATE TABLE IF NOT EXISTS round (id INTEGER PRIMARY KEY, body TEXT)",
                None,
            )?;
            sql.exec(
                "INSERT OR REPLACE INTO round (id, body) VALUES (1, ?)",
                vec![body.into()],
            )?;
            Response::from_json(
                &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
            )
        }
    }
}
