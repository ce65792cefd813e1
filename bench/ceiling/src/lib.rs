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
//! - `POST /do-shard-state`: that design with the least a server keeping
//!   a paused call behind a client-held state must add to it, driven like
//!   an MRTR round trip (the retry carries the state the first answer
//!   gave). The Worker reads the body, checks the 2026-07-28 headers as
//!   `/rpc-mcp` does, and finds the call: a new id, or the one a state
//!   names once its HMAC verifies (`sealed.rs`), so a forged state wakes
//!   no object; it forwards the bytes to the call's shard. The shard
//!   parses them, reads the call's row, writes it, and answers an
//!   `input_required` carrying a new signed state (the bench's durable
//!   lane pauses in both its rounds). No tool, no schema, no journal, no
//!   log line.

pub mod sealed;

#[cfg(target_arch = "wasm32")]
mod glue {
    use serde_json::{json, Value};
    // The class's generated glue names `wasm_bindgen` unqualified.
    use worker::wasm_bindgen;
    use worker::{
        durable_object, event, Context, DurableObject, Env, Headers, Method, Request, RequestInit,
        Response, Result, State,
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
            let stub = env
                .durable_object("CEILING")?
                .id_from_name(&format!("shard:{}", shard_of(name)))?
                .get_stub()?;
            return stub.fetch_with_request(req).await;
        }
        if path == "/do-shard-state" {
            return forward_with_state(req, &env).await;
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
        if let Some(mirrored) = mirrored {
            if let Some(refused) = mismatch(&mirrored, &body) {
                return refused;
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

    /// The 2026-07-28 headers (`MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name`) against the body: `None` when they agree, else the 400.
    fn mismatch(headers: &[Option<String>; 3], body: &Value) -> Option<Result<Response>> {
        let [version, method, name] = headers;
        let meta = &body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
        let fits = version.as_deref() == meta.as_str()
            && method.as_deref() == body["method"].as_str()
            && name.as_deref() == body["params"]["name"].as_str();
        (!fits).then(|| rpc_error(body, -32020, "header mismatch", 400))
    }

    /// A JSON-RPC error answering `body`'s request, with its HTTP status.
    fn rpc_error(body: &Value, code: i32, message: &str, status: u16) -> Result<Response> {
        Ok(Response::from_json(&json!({
            "jsonrpc": "2.0", "id": body.get("id").cloned().unwrap_or(Value::Null),
            "error": {"code": code, "message": message},
        }))?
        .with_status(status))
    }

    /// The shard (of 16) holding a call: FNV-1a of its name, as any
    /// stable spread would do.
    fn shard_of(call: &str) -> u32 {
        let hash = call.bytes().fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        hash % 16
    }

    /// `/do-shard-state` in the Worker: the body read and checked, the call
    /// found (a new one, or the one a verified state names), the bytes
    /// forwarded to its shard with the call's id in a header.
    async fn forward_with_state(mut req: Request, env: &Env) -> Result<Response> {
        let headers = req.headers();
        let mirrored = [
            headers.get("mcp-protocol-version")?,
            headers.get("mcp-method")?,
            headers.get("mcp-name")?,
        ];
        let bytes = req.bytes().await?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Some(refused) = mismatch(&mirrored, &body) {
            return refused;
        }
        let call = match body["params"]["requestState"].as_str() {
            Some(state) => match super::sealed::open(state) {
                Some(call) => call,
                None => return rpc_error(&body, -32602, "invalid requestState", 400),
            },
            None => {
                let r = || (worker::js_sys::Math::random() * 9_007_199_254_740_992.0) as u64;
                format!("{:016x}{:016x}", r(), r())
            }
        };
        let stub = env
            .durable_object("CEILING")?
            .id_from_name(&format!("state-shard:{}", shard_of(&call)))?
            .get_stub()?;
        let forwarded = Headers::new();
        forwarded.set("content-type", "application/json")?;
        forwarded.set("x-call", &call)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(forwarded)
            .with_body(Some(worker::js_sys::Uint8Array::from(&bytes[..]).into()));
        stub.fetch_with_request(Request::new_with_init(
            "https://ceiling/do-shard-state",
            &init,
        )?)
        .await
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
        /// `/do-shard-state`'s table exists (made once per instance, as
        /// durable-mcp's call store makes its own).
        calls: std::cell::Cell<bool>,
    }

    impl Ceiling {
        /// A shard's cleanup alarm, armed once per instance (not once per
        /// call), as durable-mcp's shards arm theirs.
        async fn arm_shard(&self) -> Result<()> {
            if !self.armed.replace(true) {
                self.state
                    .storage()
                    .set_alarm(std::time::Duration::from_secs(3600))
                    .await?;
            }
            Ok(())
        }

        /// `/do-shard-state` in the call's shard: the call's row read (a
        /// retry's must exist) and written (the body stands in for a
        /// journal), then a new signed state.
        async fn round_with_state(&self, req: &Request, text: &str) -> Result<Response> {
            let call = req.headers().get("x-call")?.unwrap_or_default();
            let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let id = body.get("id").cloned().unwrap_or(Value::Null);
            let sql = self.state.storage().sql();
            if !self.calls.replace(true) {
                sql.exec(
                    "CREATE TABLE IF NOT EXISTS calls (id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID",
                    None,
                )?;
            }
            let retry = body["params"]["requestState"].is_string();
            let known: Vec<Value> = sql
                .exec(
                    "SELECT body FROM calls WHERE id = ?",
                    vec![call.clone().into()],
                )?
                .to_array()?;
            if retry && known.is_empty() {
                return rpc_error(&body, -32602, "no such call", 404);
            }
            sql.exec(
                "INSERT OR REPLACE INTO calls (id, body) VALUES (?, ?)",
                vec![call.clone().into(), text.into()],
            )?;
            self.arm_shard().await?;
            let Some(state) = super::sealed::seal(&call) else {
                return rpc_error(&body, -32603, "the state could not be sealed", 500);
            };
            // Each round pauses again, as the bench's durable lane's second
            // round does (its tool asks for a sampling after the form).
            let (key, method) = if retry {
                ("draft", "sampling/createMessage")
            } else {
                ("target", "elicitation/create")
            };
            Response::from_json(&json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {key: {"method": method, "params": {
                        "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
                    "requestState": state,
                },
            }))
        }
    }

    impl DurableObject for Ceiling {
        fn new(state: State, _env: Env) -> Self {
            Self {
                state,
                armed: std::cell::Cell::new(false),
                calls: std::cell::Cell::new(false),
            }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let body = req.text().await?;
            let sql = self.state.storage().sql();
            let path = req.path();
            if path == "/do-shard-state" {
                return self.round_with_state(&req, &body).await;
            }
            if let Some(name) = path.strip_prefix("/do-shard/") {
                sql.exec(
                    "CREATE TABLE IF NOT EXISTS rounds (id TEXT PRIMARY KEY, body TEXT)",
                    None,
                )?;
                sql.exec(
                    "INSERT OR REPLACE INTO rounds (id, body) VALUES (?, ?)",
                    vec![name.into(), body.into()],
                )?;
                self.arm_shard().await?;
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
            self.calls.set(false);
            self.state.storage().delete_all().await?;
            Response::empty()
        }
    }
}
