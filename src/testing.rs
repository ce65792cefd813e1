//! A test server: your registry on the host, routed and hosted the way the
//! Worker does it, with in-memory Durable Objects and a clock you move.
//!
//! [`TestServer`] calls the same [`crate::host`] functions as the Worker
//! glue and applies the same effects (objects' storage, alarms, held-open
//! streams, the listen hub), so a test exercises everything but the
//! network and SQLite.
//!
//! ```
//! use durable_mcp::testing::TestServer;
//! use durable_mcp::{Cx, Registry, Tool, ToolError};
//!
//! async fn hello(_: &mut Cx, _: serde_json::Value) -> Result<String, ToolError> {
//!     Ok("hello".into())
//! }
//!
//! let mut r = Registry::new();
//! r.tool(Tool::new("hello", hello));
//! let mut server = TestServer::new(r);
//! let reply = server.call_tool("hello", serde_json::json!({}), serde_json::json!({}));
//! assert_eq!(reply.json["result"]["content"][0]["text"], "hello");
//! ```

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::app::Registry;
use crate::auth::{Jwt, KeyError, KeyVerifier, OAuthConfig, VerifyFuture};
use crate::effects::{Effect, Listen, Push, Reply};
use crate::engine::block_on;
use crate::host::{self, Stores};
use crate::http::{encode_header_value, AllowList, Body, HttpRequest};
use crate::protocol::versions::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN};
use crate::protocol::Method;
use crate::server::task::MemoryTaskStore;
use crate::server::{Config, Env, Server};
use crate::session::MemorySessionStore;
use crate::store::MemoryStore;
use crate::token::KeyRing;

/// One in-memory Durable Object.
#[derive(Debug, Default)]
pub struct TestObject {
    /// Its storage as a durable call sees it.
    pub call: MemoryStore,
    /// Its storage as a session sees it.
    pub session: MemorySessionStore,
    /// Its storage as a task sees it.
    pub task: MemoryTaskStore,
    /// Its storage as the hub's admin index sees it.
    pub index: crate::index::MemoryIndex,
    /// Its storage as a principal's meter sees it.
    pub meter: crate::limits::MemoryMeter,
    /// When its alarm fires next (ms since the epoch).
    pub alarm_at: Option<u64>,
    /// How the host opened it ([`host::placement`]): the location hint and
    /// the jurisdiction's namespace, as the Worker passes them to the stub.
    pub placement: host::Placement,
}

impl TestObject {
    /// Its storage as each kind of instance sees it.
    pub fn stores(&self) -> Stores<'_> {
        Stores {
            call: &self.call,
            session: &self.session,
            task: &self.task,
            index: &self.index,
            meter: &self.meter,
        }
    }

    /// Rows this object's storage wrote, whichever kind of instance it is.
    pub fn writes(&self) -> u64 {
        self.call.writes() + self.session.writes() + self.task.writes()
    }
}

/// What the requests so far cost in the units Cloudflare bills: Durable
/// Object requests (forwarded requests, hub broadcasts, alarms), SQLite
/// rows written, and alarms armed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Requests to Durable Objects, alarms included.
    pub object_requests: u64,
    /// Rows written to object storage.
    pub rows_written: u64,
    /// Alarms armed (each is a storage write too).
    pub alarms_armed: u64,
}

/// The server, its objects and what the host did for them.
pub struct TestServer {
    /// The server (change `config` or `registry` between requests freely).
    pub server: Server,
    /// The fake clock, in ms since the epoch.
    pub now_ms: u64,
    next_random: u8,
    /// Durable Objects by name (`calls:<n>`, `call:<id>`, `session:<id>` …).
    pub objects: BTreeMap<String, TestObject>,
    /// What requests pushed to held-open session streams, in order.
    pub pushes: Vec<Push>,
    /// The session stream the last reply asked to hold open.
    pub live: Option<String>,
    /// `subscriptions/listen` streams held by the hub's shards.
    pub listeners: Vec<Listen>,
    /// The shard (object name) holding each of `listeners`.
    listener_hubs: Vec<String>,
    /// Frames the hub sent its listeners.
    pub hub_frames: Vec<Value>,
    /// Object requests and alarms so far (see [`TestServer::cost`]).
    requests: Cost,
    /// Requests (alarms included) each object received, by its name: how
    /// the load spreads over the objects (a hot one shows here).
    pub per_object: BTreeMap<String, u64>,
    /// Rows written by objects since deleted.
    gone_writes: u64,
    /// Checks OAuth token signatures (a [`TestKeys`] unless replaced).
    pub verifier: Box<dyn KeyVerifier>,
    /// Tokens whose signature verified lately (as the Worker keeps them
    /// per isolate).
    pub seen: std::cell::RefCell<crate::auth::SeenTokens>,
    /// What a wrapping `@cloudflare/workers-oauth-provider` hands the
    /// Worker as `ctx.props` (JSON), in `OAUTH_WRAPPER` mode.
    pub props: Option<String>,
    /// The caller's continent as `request.cf.continent` says it (`"EU"`,
    /// `"NA"`, …) for the requests sent from now on; `None`: no `cf`, as in
    /// local development.
    pub cf_continent: Option<String>,
    /// The log lines the server wrote (each round's line and span), oldest
    /// first, as the Worker writes them to the console.
    pub logs: Vec<String>,
    /// The largest row each object's storage takes from now on, as
    /// SQLite's (`None`: any; [`crate::store::WORKERD_ROW_LIMIT`] is local
    /// workerd's): set before the objects it applies to are first used.
    pub row_limit: Option<usize>,
}

/// The native stand-in for the issuer's keys and WebCrypto: a signature
/// verifies when it is HMAC-SHA256 of the signing input under the key id
/// `kid` (see [`test_token`]); `valid_kids` are the keys the "issuer"
/// publishes. The signature check is the Worker's; this twin lets every
/// decision around it (issuer, audience, lifetime, scopes, principals) be
/// tested natively.
pub struct TestKeys {
    /// The key ids that verify.
    pub valid_kids: Vec<String>,
}

impl Default for TestKeys {
    fn default() -> Self {
        Self {
            valid_kids: vec!["test-key".to_string()],
        }
    }
}

impl KeyVerifier for TestKeys {
    fn verify<'a>(&'a self, _: &'a OAuthConfig, jwt: &'a Jwt, _: u64) -> VerifyFuture<'a> {
        let kid = jwt.kid.clone().unwrap_or_default();
        let ok = self.valid_kids.contains(&kid)
            && test_signature(&kid, &jwt.signing_input) == jwt.signature;
        Box::pin(std::future::ready(if ok {
            Ok(())
        } else {
            Err(KeyError::Invalid)
        }))
    }
}

fn test_signature(kid: &str, input: &str) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    // HMAC takes a key of any length: this never falls back to empty.
    Hmac::<sha2::Sha256>::new_from_slice(kid.as_bytes())
        .map(|mut mac| {
            mac.update(input.as_bytes());
            mac.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default()
}

/// A JWT access token with `claims`, "signed" for [`TestKeys`] with key
/// `kid` (header `alg: RS256`, `typ: at+jwt`).
pub fn test_token(kid: &str, claims: &Value) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let header = json!({"alg": "RS256", "typ": "at+jwt", "kid": kid});
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap_or_default());
    let input = format!("{}.{}", part(&header), part(claims));
    let sig = URL_SAFE_NO_PAD.encode(test_signature(kid, &input));
    format!("{input}.{sig}")
}

/// A reply, read the way a client reads it.
#[derive(Debug, Clone)]
pub struct TestReply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC message (the last SSE message when streamed).
    pub json: Value,
    /// Every SSE message, when streamed.
    pub events: Vec<Value>,
    /// The body as text (a page's HTML), when it is not a stream.
    pub text: String,
}

impl TestReply {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl TestServer {
    /// A server offering `registry`, with a test key and loopback
    /// Origin/Host lists.
    pub fn new(registry: Registry) -> Self {
        Self::with_config(registry, |_| {})
    }

    /// The same, with the configuration changed by `f` first.
    pub fn with_config(registry: Registry, f: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config {
            keys: KeyRing::parse("test:0123456789abcdef0123456789").unwrap_or_default(),
            allowed_hosts: AllowList::loopback(),
            allowed_origins: AllowList::loopback(),
            ..Config::default()
        };
        f(&mut config);
        Self {
            server: Server::new(config, registry),
            now_ms: 1_800_000_000_000,
            next_random: 0,
            objects: BTreeMap::new(),
            pushes: Vec::new(),
            live: None,
            listeners: Vec::new(),
            listener_hubs: Vec::new(),
            hub_frames: Vec::new(),
            requests: Cost::default(),
            per_object: BTreeMap::new(),
            gone_writes: 0,
            verifier: Box::new(TestKeys::default()),
            props: None,
            cf_continent: None,
            seen: Default::default(),
            logs: Vec::new(),
            row_limit: None,
        }
    }

    /// Sends one HTTP request the way the Worker receives it.
    pub fn send(&mut self, req: HttpRequest) -> TestReply {
        let reply = self.send_one(req);
        self.logs.extend(self.server.take_logs());
        self.send_notes();
        reply
    }

    /// Sends the notes rounds left for their meters, as the Worker does
    /// after each request and alarm.
    fn send_notes(&mut self) {
        let env = Env {
            now_ms: self.now_ms,
            random: [0; 16],
            continent: None,
        };
        for (name, req) in host::meter_notes(self.server.take_notes()) {
            let _ = self.in_object(&name, &req, &env);
        }
    }

    fn send_one(&mut self, mut req: HttpRequest) -> TestReply {
        // What the Worker copies out of a client's request: the headers the
        // server reads from a client, nothing else.
        let wanted = host::client_headers(&self.server);
        req.headers
            .retain(|(k, _)| wanted.iter().any(|w| w.eq_ignore_ascii_case(k)));
        self.next_random = self.next_random.wrapping_add(1);
        let env = Env {
            now_ms: self.now_ms,
            random: [self.next_random; 16],
            continent: self.continent(),
        };
        self.live = None;
        self.refresh_paused(&env);
        // The body arrives when a step asks for it, as the Worker reads it.
        let mut body = Some(std::mem::take(&mut req.body));
        let (mut inbound, mut step) = {
            let seen = self.seen.borrow();
            host::Inbound::start(&self.server, req, env.clone(), self.props.as_deref(), &seen)
        };
        let cors = inbound.take_cors();
        let reply = loop {
            step = match step {
                host::Step::Answer(reply) => break reply,
                host::Step::Forward {
                    name,
                    mut request,
                    unread,
                } => {
                    if unread {
                        request.body = body.take().unwrap_or_default();
                    }
                    break self.in_object(&name, &request, &env);
                }
                host::Step::ReadBody { limit, .. } => {
                    let mut read = body.take().unwrap_or_default();
                    read.truncate(limit.saturating_add(1));
                    inbound.body(&self.server, Ok(read))
                }
                host::Step::Verify => {
                    block_on(inbound.verify(&self.server, &*self.verifier, &self.seen))
                }
                host::Step::Serve => break block_on(inbound.serve(&self.server)),
                host::Step::Ask(asks) => {
                    let answers = asks
                        .into_iter()
                        .map(|(name, r)| self.in_object(&name, &r, &env).response)
                        .collect();
                    inbound.answers(&self.server, answers)
                }
            };
        };
        self.apply(None, &reply.effects);
        let mut reply = read(reply);
        host::apply_cors(&mut reply.headers, cors);
        reply
    }

    /// As the Worker does, now and then: reads the paused tools from the
    /// hub. (Not counted in [`TestServer::cost`]: one request per isolate
    /// every few seconds, not per call.)
    fn refresh_paused(&mut self, env: &Env) {
        if let Some((name, req)) = host::admin::refresh(&self.server, env.now_ms) {
            let counted = self.requests;
            let reply = self.in_object(&name, &req, env);
            self.requests = counted;
            host::admin::refreshed(&self.server, &reply.response, env.now_ms);
        }
    }

    /// Every paused call the server keeps (durable calls waiting for
    /// input, session calls and tasks not finished), to check a changed
    /// registry against ([`crate::replay::check`]).
    pub fn paused_calls(&self) -> Vec<crate::replay::PausedCall> {
        use crate::replay::PausedCall;
        use crate::session::SessionStore;
        use crate::store::CallStore;
        let mut out = Vec::new();
        for (name, o) in &self.objects {
            for id in o.call.ids() {
                let Ok(Some(call)) = o.call.load(&id) else {
                    continue;
                };
                if call.status.is_final() {
                    continue;
                }
                if let Some(inv) = call.journal.invocation.clone() {
                    out.push(PausedCall::new(
                        format!("durable:{id}"),
                        inv.tool,
                        inv.arguments,
                        call.journal,
                    ));
                }
            }
            for call in o.session.calls().unwrap_or_default() {
                if call.state.is_final() || call.method != Method::ToolsCall.name() {
                    continue;
                }
                out.push(PausedCall::new(
                    format!("{name}/{}", call.call_id),
                    call.params["name"].as_str().unwrap_or_default().to_string(),
                    call.params["arguments"].clone(),
                    call.journal,
                ));
            }
            if let Ok(Some(task)) = crate::server::task::TaskStore::load(&o.task) {
                if !task.status.is_final() {
                    out.push(PausedCall::new(
                        name.clone(),
                        task.tool,
                        task.arguments,
                        task.journal,
                    ));
                }
            }
        }
        out
    }

    /// Fires every alarm that is due at `now_ms`, applying what they do.
    pub fn fire_alarms(&mut self) {
        let env = Env {
            now_ms: self.now_ms,
            random: [0; 16],
            continent: None,
        };
        self.refresh_paused(&env);
        let due: Vec<String> = self
            .objects
            .iter()
            .filter(|(_, o)| o.alarm_at.is_some_and(|at| at <= self.now_ms))
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            let Some(o) = self.objects.get_mut(&name) else {
                continue;
            };
            o.alarm_at = None;
            self.requests.object_requests += 1;
            *self.per_object.entry(name.clone()).or_default() += 1;
            let o = &self.objects[&name];
            let stores = o.stores();
            let effects =
                block_on(host::alarm(&self.server, &stores, self.now_ms)).unwrap_or_default();
            self.apply(Some(&name), &effects);
            self.logs.extend(self.server.take_logs());
            self.send_notes();
        }
    }

    /// What the requests so far cost (see [`Cost`]).
    pub fn cost(&self) -> Cost {
        let live: u64 = self.objects.values().map(TestObject::writes).sum();
        Cost {
            rows_written: live + self.gone_writes,
            ..self.requests
        }
    }

    /// [`TestServer::cf_continent`] as the Worker reads it.
    fn continent(&self) -> Option<[u8; 2]> {
        crate::server::continent_code(self.cf_continent.as_deref()?.as_bytes())
    }

    fn in_object(&mut self, name: &str, req: &HttpRequest, env: &Env) -> Reply {
        self.requests.object_requests += 1;
        *self.per_object.entry(name.to_string()).or_default() += 1;
        let limit = self.row_limit;
        // Opened the way the Worker opens its stub.
        let placement = host::placement(name);
        let object = self.objects.entry(name.to_string()).or_insert_with(|| {
            let o = TestObject {
                placement,
                ..TestObject::default()
            };
            if let Some(bytes) = limit {
                o.call.limit_rows(bytes);
                o.task.limit_rows(bytes);
                o.session.limit_rows(bytes);
            }
            o
        });
        let stores = object.stores();
        let reply = block_on(host::handle_in_object(&self.server, req, env, &stores));
        self.apply(Some(name), &reply.effects);
        // The object's own effects are applied; what is left for the
        // caller is only what a client would see.
        Reply {
            response: reply.response,
            effects: Vec::new(),
        }
    }

    /// Applies effects as the Worker glue does (`object`: whose they are).
    fn apply(&mut self, object: Option<&str>, effects: &[Effect]) {
        let changed = crate::effects::Changes::of(effects);
        if !changed.is_empty() {
            // The hub fans them out, as its object would.
            let env = Env {
                now_ms: self.now_ms,
                random: [0; 16],
                continent: None,
            };
            let watchers = object
                .and_then(|n| self.objects.get(n))
                .map(|o| host::watchers_for(effects, &o.task))
                .unwrap_or_default();
            // The hubs' answers (204) go nowhere, as in the Worker.
            for (name, req) in host::announce(&self.server, &changed, &watchers) {
                let _ = self.in_object(&name, &req, &env);
            }
        }
        for effect in effects {
            match effect {
                Effect::ListChanged(_) | Effect::TaskChanged(_) | Effect::Indexed(_) => {}
                Effect::Admit(a) => {
                    let env = Env {
                        now_ms: self.now_ms,
                        random: [0; 16],
                        continent: None,
                    };
                    let (meter, req) = host::admission_request(a);
                    let answer = self.in_object(&meter, &req, &env).response;
                    let Some(name) = object else { continue };
                    let Some(o) = self.objects.get(name) else {
                        continue;
                    };
                    let stores = o.stores();
                    let now = self.now_ms;
                    let effects = block_on(host::admitted(&self.server, &stores, a, &answer, now))
                        .unwrap_or_default();
                    self.apply(object, &effects);
                }
                Effect::Watch(w) => {
                    let env = Env {
                        now_ms: self.now_ms,
                        random: [0; 16],
                        continent: None,
                    };
                    for (name, req) in host::watch_requests(w) {
                        let _ = self.in_object(&name, &req, &env);
                    }
                }
                Effect::Listen(l) => {
                    self.listeners.push(l.clone());
                    self.listener_hubs
                        .push(object.unwrap_or_default().to_string());
                }
                Effect::Fanout(changes) => {
                    let hub = object.unwrap_or_default();
                    let frames: Vec<Value> = self
                        .listeners
                        .iter()
                        .zip(&self.listener_hubs)
                        .filter(|(_, h)| h.as_str() == hub)
                        .flat_map(|(l, _)| l.frames_for(changes))
                        .filter_map(|e| serde_json::from_str(&e.data).ok())
                        .collect();
                    self.hub_frames.extend(frames);
                }
                Effect::HoldOpen(stream) => self.live = Some(stream.clone()),
                Effect::Push(p) => self.pushes.push(p.clone()),
                Effect::WakeAt(at) => {
                    if let Some(o) = object.and_then(|n| self.objects.get_mut(n)) {
                        // The Worker arms the alarm for every WakeAt.
                        self.requests.alarms_armed += 1;
                        o.alarm_at = Some(*at);
                    }
                }
                Effect::WakeBy(by) => {
                    if let Some(o) = object.and_then(|n| self.objects.get_mut(n)) {
                        if Effect::must_arm(o.alarm_at, *by) {
                            self.requests.alarms_armed += 1;
                            o.alarm_at = Some(*by);
                        }
                    }
                }
                Effect::DeleteStorage => {
                    if let Some(o) = object.and_then(|n| self.objects.remove(n)) {
                        self.gone_writes += o.writes();
                    }
                }
            }
        }
    }

    /// A well-formed 2026-07-28 request with `params` (its `_meta` added,
    /// declaring elicitation, sampling and roots) and the mirrored headers;
    /// then `edit` changes the headers.
    pub fn request(
        &mut self,
        method: &str,
        mut params: Value,
        edit: impl FnOnce(&mut Vec<(String, String)>),
    ) -> TestReply {
        if params.get("_meta").is_none() {
            params["_meta"] = json!({
                META_PROTOCOL_VERSION: MODERN,
                META_CLIENT_CAPABILITIES: {"elicitation": {}, "sampling": {}, "roots": {}},
            });
        }
        let mut headers = vec![
            ("host".to_string(), "127.0.0.1:8787".to_string()),
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
            ("mcp-protocol-version".to_string(), MODERN.to_string()),
            ("mcp-method".to_string(), method.to_string()),
        ];
        if let Some(name) = params
            .get("name")
            .or_else(|| params.get("uri"))
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
        {
            headers.push(("mcp-name".to_string(), encode_header_value(name)));
        }
        edit(&mut headers);
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        self.send(HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers,
            body: body.to_string().into_bytes(),
        })
    }

    /// A JSON-RPC message POSTed to `/mcp` as a 2025-11-25 client sends
    /// it, with `headers` added (a session's `mcp-session-id` …).
    pub fn post(&mut self, headers: &[(&str, &str)], body: &Value) -> TestReply {
        let mut h: Vec<(String, String)> = vec![
            ("host".into(), "localhost:8787".into()),
            ("content-type".into(), "application/json".into()),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        h.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.send(HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers: h,
            body: body.to_string().into_bytes(),
        })
    }

    /// A 2026-07-28 request with `params`.
    pub fn call(&mut self, method: &str, params: Value) -> TestReply {
        self.request(method, params, |_| {})
    }

    /// `tools/call` of `name` with `arguments`; `extra` goes into params
    /// (`requestState`, `inputResponses`).
    pub fn call_tool(&mut self, name: &str, arguments: Value, extra: Value) -> TestReply {
        let mut params = json!({"name": name, "arguments": arguments});
        if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
            p.extend(e);
        }
        self.call(Method::ToolsCall.name(), params)
    }

    /// A request to the admin API or console at `path` (its query kept),
    /// as an operator holding the bearer `token` sends it, with a JSON
    /// `body` when given (a loopback Host is set).
    pub fn admin(
        &mut self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> TestReply {
        let mut headers = vec![
            ("host".to_string(), "localhost:8787".to_string()),
            ("authorization".to_string(), format!("Bearer {token}")),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        self.send(HttpRequest {
            method: method.into(),
            path: path.into(),
            headers,
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        })
    }

    /// Any request: an HTTP `method`, extra headers (a loopback Host is
    /// set), and a raw body.
    pub fn raw(&mut self, method: &str, headers: &[(&str, &str)], body: &str) -> TestReply {
        let mut h: Vec<(String, String)> = vec![("host".into(), "localhost:8787".into())];
        h.extend(
            headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string())),
        );
        self.send(HttpRequest {
            method: method.into(),
            path: "/mcp".into(),
            headers: h,
            body: body.as_bytes().to_vec(),
        })
    }
}

/// Reads a reply as a client would.
fn read(reply: Reply) -> TestReply {
    let resp = reply.response;
    let (json, events) = match &resp.body {
        Body::Bytes(b) => (serde_json::from_slice(b).unwrap_or(Value::Null), vec![]),
        Body::Sse(ev) | Body::SseOpen(ev) => {
            let msgs: Vec<Value> = ev
                .iter()
                .filter_map(|e| serde_json::from_str(&e.data).ok())
                .collect();
            (msgs.last().cloned().unwrap_or(Value::Null), msgs)
        }
        Body::Empty => (Value::Null, vec![]),
    };
    let text = match &resp.body {
        Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    TestReply {
        status: resp.status,
        headers: resp.headers,
        json,
        events,
        text,
    }
}
