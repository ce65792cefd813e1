//! The sans-IO server: an [`HttpRequest`] in, one [`Reply`] (response plus
//! effects) out.
//!
//! Every request is checked the same way first (path, Origin/Host, auth,
//! size, JSON), then classified once by protocol era and handed to that era's
//! code path. No clock, randomness or storage is read here: they come in
//! through [`Env`]. Which Durable Object serves what is decided one layer up,
//! in [`crate::host`].
//!
//! # Layout
//! - `config.rs`: configuration from Worker vars and secrets.
//! - `request.rs`: a modern request's `_meta`, method replies, shared params.
//! - `modern.rs`: the 2026-07-28 stateless wire: headers, `_meta`, dispatch.
//! - `methods/`: the methods both wires serve, one file each, and the
//!   2026-07-28 dispatch on `protocol::Method`.
//! - `round.rs`: one round of a paused call wherever it is kept: the one
//!   place a `Cx` is built, and how a round ended (`Step`).
//! - `target.rs`: what a call runs (`Target`), and running its body once.
//! - `call.rs`: the keeper of a call in a sealed token and, in durable
//!   mode, a call's Durable Object.
//! - `mrtr.rs`, `saga.rs`, `streamless.rs`: the wires for paused calls.
//! - `skills.rs`: the skills extension's methods (`skills/*`, `resources/directory/read`).
//! - `task/`: the tasks extension, on top of `call.rs` and `mrtr.rs`;
//!   `methods/` hands it task calls and `tasks/*`.

mod call;
mod config;
mod gone;
mod methods;
mod modern;
mod mrtr;
mod out_of_band;
mod request;
pub(crate) mod round;
mod saga;
mod skills;
mod streamless;
mod target;
pub mod task;

pub(crate) use call::{
    cancelled_by_operator, input_responses, run_round, state_param, RoundInput, RoundOutcome,
};
pub use call::{Durable, TOKEN_JOURNAL_CAP};
pub use config::{Config, RoundLogs, JURISDICTIONS};
pub(crate) use methods::{call_target, capabilities, stateless_method};
pub(crate) use mrtr::{call as mrtr_call, shape as mrtr_shape};
pub(crate) use out_of_band::out_of_band;
pub(crate) use request::{has_modern_meta, MethodReply, Parsed, RequestMeta};
pub(crate) use round::{Kept, Site, Step};
pub(crate) use skills::declare as declare_skills;
pub(crate) use target::{run_target, Target};

use serde_json::Value;

use crate::app::Registry;
use crate::auth::Caller;
use crate::effects::{Effect, Reply};
use crate::engine::ClientCaps;
use crate::error::{ErrorKind, McpError};
use crate::http::{check_origin_and_host, HttpRequest, HttpResponse};
use crate::protocol::{parse_message, result_bytes, versions, Message};
use task::TaskHost;

/// What the outside world supplies for one request.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// 16 fresh random bytes (call ids, session ids).
    pub random: [u8; 16],
    /// The caller's continent as the runtime says (`request.cf.continent`:
    /// `EU`, `NA`, …), which picks a new durable call's region
    /// (`host/place.rs`). `None` where there is no `cf` (local
    /// development, a test): the shards of no region.
    pub continent: Option<[u8; 2]>,
}

/// `request.cf.continent` as [`Env::continent`] holds it: two ASCII
/// capitals, anything else none (the host passes what the runtime gave).
pub fn continent_code(letters: &[u8]) -> Option<[u8; 2]> {
    match letters {
        [a, b] if a.is_ascii_uppercase() && b.is_ascii_uppercase() => Some([*a, *b]),
        _ => None,
    }
}

/// An MCP server: configuration plus what it offers.
pub struct Server {
    /// The configuration.
    pub config: Config,
    /// Tools, resources, prompts.
    pub registry: Registry,
    /// The tools an operator paused, as this isolate last read them.
    pub paused: crate::index::PausedTools,
    /// Log lines the last requests wrote (a round's line and span), for
    /// the host to write out ([`Server::take_logs`]).
    logs: std::cell::RefCell<Vec<String>>,
    /// [`Server::scopes`], once built.
    scopes: std::cell::OnceCell<crate::auth::ScopePolicy>,
    /// Every limit the server enforces: the code's, with the `LIMITS`
    /// var's over them.
    pub limits: crate::limits::Policy,
    /// What rounds told their principals' meters since the host last took
    /// them, each with its meter's object ([`Server::take_notes`]).
    notes: std::cell::RefCell<Vec<(String, crate::limits::Note)>>,
    /// What this isolate holds of its meters' answers (window-limited
    /// calls admitted ahead, refusals until their window ends).
    pub(crate) spare: crate::limits::Spare,
}

/// Who is calling, once authenticated (`""` when auth is off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Principal(pub String);

/// What one request carries through the server.
pub(crate) struct Ctx<'a> {
    pub(crate) env: &'a Env,
    pub(crate) principal: &'a Principal,
    /// Who the principal is, as its credential said (scopes, client).
    pub(crate) caller: &'a Caller,
    /// This server's canonical resource URI as the request reached it.
    pub(crate) resource: String,
    /// The request's `Host`: this server's origin as the request reached
    /// it, formatted ([`Ctx::origin`]) only by a call that may send the
    /// user to a page, not on every request.
    pub(crate) host: Option<&'a str>,
    /// Set when the request is served inside a call's Durable Object.
    pub(crate) durable: Option<&'a Durable<'a>>,
    /// Set when the request is served inside a task's Durable Object.
    pub(crate) task: Option<&'a TaskHost<'a>>,
    /// A new task a limit held back: why (the Worker's refusal).
    #[cfg_attr(
        not(any(feature = "limits", not(target_arch = "wasm32"))),
        allow(dead_code)
    )]
    pub(crate) limited: Option<crate::limits::Refusal>,
}

impl Ctx<'_> {
    /// This server's origin as the request reached it (for pages).
    pub(crate) fn origin(&self) -> String {
        crate::auth::origin_of(self.host)
    }
}

/// Where a request is served: the Worker, or the object of a durable call
/// or of a task.
#[derive(Clone, Copy)]
pub(crate) enum Place<'a> {
    /// The stateless Worker (or an object that holds neither).
    Worker,
    /// A durable call's object.
    Call(&'a Durable<'a>),
    /// A task's object.
    Task(&'a TaskHost<'a>),
}

/// A future for a wire few clients speak (the saga methods, the streamless
/// sketch), behind a pointer the compiler cannot see through. Awaited as it
/// is, its state machine was inlined into the server's own (30 KB with the
/// rest, one function), which V8 compiles whole the first time any request
/// reaches it: V8 compiles a wasm function on its first call. Boxed, its
/// code is compiled only when such a request comes, for an allocation on
/// that request.
fn seldom<'a, T>(
    f: impl std::future::Future<Output = T> + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>> {
    Box::pin(f)
}

impl Server {
    /// Queues a log line for the host to write.
    pub(crate) fn log(&self, line: String) {
        self.logs.borrow_mut().push(line);
    }

    /// The log lines written since the last call, oldest first: the host
    /// writes them out (the Worker to the console, where Workers Logs and
    /// Logpush read them; a test reads them).
    pub fn take_logs(&self) -> Vec<String> {
        std::mem::take(&mut *self.logs.borrow_mut())
    }

    /// Queues a note for a meter (its object's name).
    pub(crate) fn note(&self, meter: String, note: crate::limits::Note) {
        self.notes.borrow_mut().push((meter, note));
    }

    /// Whether any limit applies to `principal`'s calls: only then do its
    /// calls' pauses reach its meter.
    pub(crate) fn limits_apply(&self, principal: &str) -> bool {
        self.limits.any_for_every()
            || (cfg!(any(feature = "limits", not(target_arch = "wasm32")))
                && self.limits.own(principal).is_some_and(|s| s.any()))
    }

    /// The notes for the meters queued since the last call: the host
    /// sends them ([`crate::host::meter_notes`]).
    pub fn take_notes(&self) -> Vec<(String, crate::limits::Note)> {
        std::mem::take(&mut *self.notes.borrow_mut())
    }
}

/// The limits the code sets (the registry's, each tool's), with the
/// `LIMITS` var's over them.
fn limits_of(config: &Config, registry: &Registry) -> crate::limits::Policy {
    if !cfg!(any(feature = "limits", not(target_arch = "wasm32"))) {
        return crate::limits::Policy::default();
    }
    let mut code = crate::limits::Policy {
        all: registry.limits,
        ..Default::default()
    };
    for t in registry.tools.iter().filter(|t| t.limits.any()) {
        code.tools.insert(t.name.clone(), t.limits);
    }
    match &config.limits {
        Some(var) => code.overlaid(var),
        None => code,
    }
}

/// The refusal a new task's request carries, if a limit held it back.
#[cfg(any(feature = "limits", not(target_arch = "wasm32")))]
fn limited_of(req: &HttpRequest) -> Option<crate::limits::Refusal> {
    let text = req.header(crate::limits::LIMITED_HEADER)?;
    let v = serde_json::from_str::<Value>(text).ok()?;
    crate::limits::wire::refusal(&v).ok()
}

/// Without limits no task is held back.
#[cfg(not(any(feature = "limits", not(target_arch = "wasm32"))))]
fn limited_of(_: &HttpRequest) -> Option<crate::limits::Refusal> {
    None
}

/// A fresh call id from the request's randomness.
pub fn new_call_id(env: &Env) -> String {
    crate::engine::hex(&env.random)
}

/// Whether `id` has the shape [`new_call_id`] gives: 32 lowercase hex
/// digits (128 random bits).
pub(crate) fn is_call_id_shape(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Server {
    /// A server with `config` offering `registry`.
    pub fn new(config: Config, registry: Registry) -> Self {
        crate::store::log::set_call_cap(config.max_call_bytes);
        let limits = limits_of(&config, &registry);
        Self {
            config,
            registry,
            paused: Default::default(),
            logs: Default::default(),
            scopes: Default::default(),
            limits,
            notes: Default::default(),
            spare: Default::default(),
        }
    }

    /// Serves a request. `place`: the Worker or an object. `caller`: who
    /// is calling, as the prechecks found in the Worker
    /// ([`crate::host::Inbound`]); `None` in an object, which trusts those
    /// checks and reads the caller the Worker forwarded. `parsed`: the
    /// body, already read by the router (so it is parsed once).
    ///
    /// Boxed so that every caller shares one copy of the server's future:
    /// awaited directly from the Worker's path and the objects' path, the
    /// compiler inlined it into each (+30 KB of wasm).
    pub(crate) fn serve<'a>(
        &'a self,
        req: &'a HttpRequest,
        env: &'a Env,
        place: Place<'a>,
        caller: Option<Caller>,
        parsed: Option<Parsed>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + 'a>> {
        Box::pin(self.serve_unboxed(req, env, place, caller, parsed))
    }

    async fn serve_unboxed(
        &self,
        req: &HttpRequest,
        env: &Env,
        place: Place<'_>,
        caller: Option<Caller>,
        parsed: Option<Parsed>,
    ) -> Reply {
        let durable = match place {
            Place::Call(d) => Some(d),
            _ => None,
        };
        let task = match place {
            Place::Task(t) => Some(t),
            _ => None,
        };
        let reply = match self
            .serve_inner(req, env, durable, task, caller, parsed)
            .await
        {
            Ok(reply) => reply,
            Err((e, id)) => Reply::new(error_response(&e, id.as_ref())),
        };
        // A call is deleted after the idle TTL. Its object's alarm must fire
        // by then once the call is stored; when it fires it deletes the calls
        // idle that long and arms itself for the oldest left (`host::alarm`),
        // so later rounds need not re-arm it, nor a call whose object (its
        // shard) already has an earlier alarm.
        match durable {
            Some(d) if d.created.get() => reply.with(Effect::WakeBy(
                env.now_ms.saturating_add(self.config.state_ttl_ms),
            )),
            _ => reply,
        }
    }

    async fn serve_inner(
        &self,
        req: &HttpRequest,
        env: &Env,
        durable: Option<&Durable<'_>>,
        task: Option<&TaskHost<'_>>,
        caller: Option<Caller>,
        parsed: Option<Parsed>,
    ) -> Result<Reply, (McpError, Option<Value>)> {
        if let (Some(oauth), "GET" | "HEAD") = (self.config.sign_in.oauth(), req.method.as_str()) {
            if crate::auth::is_metadata_path(&req.path) {
                return Ok(Reply::new(self.resource_metadata(oauth, req)));
            }
        }
        if req.path != "/mcp" {
            return Err((McpError::unknown_path(&req.path), None));
        }
        let caller = match caller {
            Some(c) => c,
            None => self.authenticate(req).map_err(|e| (e, None))?,
        };
        let principal = Principal(caller.principal.clone());
        match req.method.as_str() {
            "POST" => {}
            "OPTIONS" => {
                return Ok(Reply::new(
                    HttpResponse::empty(204).with_header("allow", "POST"),
                ))
            }
            // GET opens a 2025 standalone stream and DELETE ends a 2025
            // session; neither exists on the stateless wire.
            _ => {
                return Err((
                    McpError::new(ErrorKind::MethodNotAllowed, "Method not allowed: use POST"),
                    None,
                ))
            }
        }
        if req.header(versions::SESSION_HEADER).is_some() {
            // A session id the router did not send to a session object
            // cannot name one: the client must initialize a new session.
            return Err((
                McpError::new(
                    ErrorKind::SessionNotFound,
                    "Session not found: malformed Mcp-Session-Id; initialize a new session",
                ),
                None,
            ));
        }
        let (message, tool) = match parsed {
            Some(p) => (p.message, p.tool),
            None => (parse_message(&req.body)?, None),
        };
        let ctx = Ctx {
            env,
            principal: &principal,
            caller: &caller,
            resource: self.resource_of(req),
            host: req.header("host"),
            durable,
            task,
            limited: task.and_then(|_| limited_of(req)),
        };
        // Requests without 2026 `_meta` that use a seed wire are served
        // there; everything else is held to the 2026-07-28 rules.
        if let Message::Request(r) = &message {
            if !request::has_modern_meta(r) {
                let id = Some(r.id.clone());
                if r.kind.is_some_and(crate::protocol::Method::is_saga) {
                    let result = seldom(saga::handle(self, r, ClientCaps::all(), &ctx))
                        .await
                        .map_err(|e| (e, id))?;
                    return Ok(Reply::new(result_reply(&r.id, &result)));
                }
                if streamless::opted_in(req, r) {
                    let message = seldom(streamless::handle(self, r, ClientCaps::all(), &ctx))
                        .await
                        .map_err(|e| (e, id))?;
                    return Ok(Reply::new(HttpResponse::json(200, &message)));
                }
            }
        }
        modern::handle(self, req, message, tool, &ctx).await
    }

    /// The checks every request passes before anything else: Origin and
    /// Host, sign-in, body size. `signed`: the caller the host verified
    /// (OAuth, or a wrapping authorization server). Returns who is calling.
    /// Called once per request, by [`crate::host::Inbound`].
    pub(crate) fn precheck(
        &self,
        req: &HttpRequest,
        signed: Option<Caller>,
    ) -> Result<Caller, McpError> {
        self.check_origin(req)?;
        let caller = self.caller_of(req, signed)?;
        self.check_size(req)?;
        Ok(caller)
    }

    /// [`Server::precheck`] for a page beside `/mcp`: a form posts with the
    /// `Origin` of this very server, which passes as any allowed one does.
    pub(crate) fn precheck_page(&self, req: &HttpRequest) -> Result<Caller, McpError> {
        let host = req.header("host");
        // A page's own form, posted under `Referrer-Policy: no-referrer`,
        // comes with `Origin: null`; the browser's `Sec-Fetch-Site` (no
        // page can set it) says it is this origin's.
        let own_null = req.header("sec-fetch-site") == Some("same-origin");
        let origin = req.header("origin").filter(|o| {
            let same = o
                .split_once("://")
                .zip(host)
                .is_some_and(|((_, rest), h)| rest.eq_ignore_ascii_case(h));
            !(same || own_null && o.trim() == "null")
        });
        self.check_origin_of(origin, host)?;
        let caller = self.authenticate(req)?;
        self.check_size(req)?;
        Ok(caller)
    }

    /// `Origin` and `Host` against their allow-lists (DNS rebinding).
    fn check_origin(&self, req: &HttpRequest) -> Result<(), McpError> {
        self.check_origin_of(req.header("origin"), req.header("host"))
    }

    /// `Host` against its allow-list (DNS rebinding), with no `Origin`
    /// read: the admin paths' check (a console form posts with this very
    /// server's `Origin`).
    pub(crate) fn check_host(&self, host: Option<&str>) -> Result<(), McpError> {
        self.check_origin_of(None, host)
    }

    fn check_origin_of(&self, origin: Option<&str>, host: Option<&str>) -> Result<(), McpError> {
        check_origin_and_host(
            origin,
            host,
            &self.config.allowed_origins,
            &self.config.allowed_hosts,
        )
        .map_err(|why| {
            let what = match why {
                crate::http::GuardRejection::Origin => "Origin",
                crate::http::GuardRejection::Host => "Host",
            };
            McpError::new(
                ErrorKind::Forbidden,
                format!("Forbidden: {what} not allowed"),
            )
        })
    }

    /// The body size limit. The declared length is checked first, so the
    /// Worker need not read (nor buffer) a body it will refuse; it reads no
    /// more than the limit and one byte, so an undeclared body over it is
    /// refused too.
    pub(crate) fn check_size(&self, req: &HttpRequest) -> Result<(), McpError> {
        let declared = req
            .header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let limit = self.config.max_body_bytes;
        if declared > limit as u64 || req.body.len() > limit {
            return Err(McpError::new(
                ErrorKind::TooLarge,
                format!("Request body is larger than {limit} bytes"),
            ));
        }
        Ok(())
    }

    /// Who is calling. With OAuth on, the caller the Worker verified
    /// before routing and carried in an internal header (no client can set
    /// it); with `API_TOKENS`, the entry the bearer names (the Worker and
    /// every object read it the same way, through [`crate::auth`]); else
    /// nobody in particular.
    pub(crate) fn authenticate(&self, req: &HttpRequest) -> Result<Caller, McpError> {
        let forwarded = req
            .header(crate::auth::CALLER_HEADER)
            .and_then(|v| crate::json::from_str::<Caller>(v).ok());
        self.caller_of(req, forwarded)
    }

    /// Who is calling, as the sign-in mode decides: `signed` is the caller
    /// the host verified.
    pub(crate) fn caller_of(
        &self,
        req: &HttpRequest,
        signed: Option<Caller>,
    ) -> Result<Caller, McpError> {
        self.config
            .sign_in
            .caller(req.header("authorization"), req.header("host"), signed)
    }

    /// This server's resource URI as `req` reached it, for a scope
    /// challenge; empty when no sign-in is configured.
    pub(crate) fn resource_of(&self, req: &HttpRequest) -> String {
        self.config.sign_in.resource_of(req.header("host"))
    }

    /// The scopes this server asks for, built on first use from the
    /// sign-in mode and the registry (both fixed once the isolate serves).
    pub fn scopes(&self) -> &crate::auth::ScopePolicy {
        self.scopes.get_or_init(|| {
            crate::auth::ScopePolicy::new(
                &self.config.sign_in,
                self.registry.tools.iter().map(|t| t.scopes.as_slice()),
            )
        })
    }

    /// The scopes a call of `tool` needs: the server-wide ones and its own.
    pub fn tool_scopes(&self, tool: &crate::app::Tool) -> Vec<String> {
        self.scopes().for_tool(&tool.scopes)
    }

    /// The Protected Resource Metadata, readable cross-origin.
    fn resource_metadata(
        &self,
        oauth: &crate::auth::OAuthConfig,
        req: &HttpRequest,
    ) -> HttpResponse {
        let resource = crate::auth::resource_uri(req.header("host"));
        let doc = crate::auth::metadata(oauth, &resource, self.scopes().supported());
        HttpResponse::json(200, &doc).with_header("access-control-allow-origin", "*")
    }
}

/// A success reply as JSON: the envelope written straight to bytes
/// ([`result_bytes`]), as every wire answers a request that needs no stream.
pub(crate) fn result_reply(id: &Value, result: &Value) -> HttpResponse {
    HttpResponse::json_bytes(200, result_bytes(id, result))
}

/// The one place an error becomes an HTTP response.
pub fn error_response(e: &McpError, id: Option<&Value>) -> HttpResponse {
    let mut resp = HttpResponse::json(e.http_status(), &e.to_response(id));
    if let Some(challenge) = &e.challenge {
        // Browser clients read the challenge only if CORS exposes it.
        return resp
            .with_header("www-authenticate", challenge.clone())
            .with_header("access-control-expose-headers", "WWW-Authenticate");
    }
    match e.kind {
        ErrorKind::Unauthorized => {
            resp = resp.with_header("www-authenticate", "Bearer realm=\"mcp\"");
        }
        ErrorKind::MethodNotAllowed => {
            resp = resp.with_header("allow", "POST");
        }
        // When to try again, where the error says (a paused tool, a limit).
        ErrorKind::Unavailable | ErrorKind::Limited => {
            if let Some(s) = e.data.as_ref().and_then(|d| d["retryAfter"].as_u64()) {
                resp = resp.with_header("retry-after", s.to_string());
            }
        }
        _ => {}
    }
    resp
}

/// The versions this server speaks, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    versions::MODERN_VERSIONS.to_vec()
}
