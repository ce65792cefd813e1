//! The benchmark's ceilings, built with the same toolchain as durable-mcp
//! (worker-build, wasm-bindgen, wasm-opt) and served by the same workerd:
//!
//! - `POST /rpc`: parses the JSON-RPC body and answers a fixed result —
//!   what any MCP server must at least do for a stateless call;
//! - `POST /do/<name>`: forwards to the Durable Object `<name>`, which
//!   writes one SQLite row and answers — what a durable round must at
//!   least do (the bench sends a fresh name, then the same name again).
//!
//! - `POST /rpc-state`: as `/rpc`, for a two-request round trip: a body
//!   without `params.requestState` gets a fixed answer carrying a fixed
//!   610-character state (as long as an MRTR round's sealed state), one
//!   with it the fixed result — the shape of an MRTR round trip, with
//!   nothing sealed, opened or replayed.
//!
//! Nothing there is MCP; that is the point. Two more routes measure what
//! the targets leave out, to show where the rest of the gap goes:
//!
//! - `POST /rpc-mcp`: as `/rpc`, plus what the 2026-07-28 wire obliges
//!   any server to check on a stateless call: the `MCP-Protocol-Version`,
//!   `Mcp-Method` and `Mcp-Name` headers against the body (400 if they
//!   differ). Still no tool, no schema, no validation of `_meta`.
//! - `POST /do-alarm/<name>`: as `/do/<name>`, plus the alarm an object
//!   that holds a paused call must arm on its first request, or its storage
//!   would outlive an abandoned call (the alarm deletes it).
//! - `POST /do-shard/<name>`: the same work with calls sharded as
//!   durable-mcp shards them (`CALL_SHARDS`, default 16): `<name>`'s row in
//!   one of 16 long-lived objects, which arms its alarm once (not once per
//!   call) — the plain-DO ceiling of that design.

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
        if let Some(name) = path
            .strip_prefix("/do/")
            .or_else(|| path.strip_prefix("/do-alarm/"))
        {
            let stub = env
                .durable_object("CEILING")?
                .id_from_name(name)?
                .get_stub()?;
            return stub.fetch_with_request(req).await;
        }
        if let Some(name) = path.strip_prefix("/do-shard/") {
            // FNV-1a of the name: any stable spread will do.
            let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
                (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
            });
            let stub = env
                .durable_object("CEILING")?
                .id_from_name(&format!("shard:{}", hash % 16))?
                .get_stub()?;
            return stub.fetch_with_request(req).await;
        }
        // Read before the body, as a server that checks them must.
        let headers = req.headers();
        let mirrored = if path == "/rpc-mcp" {
            Some([
                headers.get("mcp-protocol-version")?,
                headers.get("mcp-method")?,
                headers.get("mcp-name")?,
            ])
        } else {
            None
        };
        let body: Value = req.json().await.unwrap_or(Value::Null);
        if let Some([version, method, name]) = mirrored {
            let meta = &body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
            let fits = version.as_deref() == meta.as_str()
                && method.as_deref() == body["method"].as_str()
                && name.as_deref() == body["params"]["name"].as_str();
            if !fits {
                return Ok(Response::from_json(&json!({
                    "jsonrpc": "2.0", "id": body.get("id").cloned().unwrap_or(Value::Null),
                    "error": {"code": -32020, "message": "header mismatch"},
                }))?
                .with_status(400));
            }
        }
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        if path == "/rpc-state" && !body["params"]["requestState"].is_string() {
            return Response::from_json(&json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {"q": {"method": "elicitation/create", "params": {
                        "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
                    "requestState": FIXED_STATE.with(|s| s.clone()),
                },
            }));
        }
        Response::from_json(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"resultType": "complete", "content": [{"type": "text", "text": "3"}]},
        }))
    }

    thread_local! {
        /// What `/rpc-state` hands out as the state: 610 base64url characters.
        static FIXED_STATE: String = "v1.".to_string() + &"AbCdEfGhIj".repeat(61)[..607];
    }

    /// One SQLite write per request.
    #[durable_object]
    pub struct Ceiling {
        state: State,
        /// A shard's alarm is armed (this instance armed it).
        armed: std::cell::Cell<bool>,
    }

    impl DurableObject for Ceiling {
        fn new(state: State, _env: Env) -> Self {
            Self {
                state,
                armed: std::cell::Cell::new(false),
            }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let body = req.text().await?;
            let sql = self.state.storage().sql();
            let path = req.path();
            if let Some(name) = path.strip_prefix("/do-shard/") {
                sql.exec(
                    "CREATE TABLE IF NOT EXISTS rounds (id TEXT PRIMARY KEY, body TEXT)",
                    None,
                )?;
                sql.exec(
                    "INSERT OR REPLACE INTO rounds (id, body) VALUES (?, ?)",
                    vec![name.into(), body.into()],
                )?;
                if !self.armed.replace(true) {
                    self.state
                        .storage()
                        .set_alarm(std::time::Duration::from_secs(3600))
                        .await?;
                }
                return Response::from_json(
                    &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
                );
            }
            sql.exec(
                "CREATE TABLE IF NOT EXISTS round (id INTEGER PRIMARY KEY, body TEXT)",
                None,
            )?;
            // The first round of a call carries no state yet.
            let first = !body.contains("\"requestState\"");
            sql.exec(
                "INSERT OR REPLACE INTO round (id, body) VALUES (1, ?)",
                vec![body.into()],
            )?;
            if first && path.starts_with("/do-alarm/") {
                self.state
                    .storage()
                    .set_alarm(std::time::Duration::from_secs(3600))
                    .await?;
            }
            Response::from_json(
                &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
            )
        }

        async fn alarm(&self) -> Result<Response> {
            self.armed.set(false);
            self.state.storage().delete_all().await?;
            Response::empty()
        }
    }
}
