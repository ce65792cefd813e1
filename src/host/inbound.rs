//! One request's way in, from its head to where it is served: every step
//! and their order decided here, once, for the Worker and the test server
//! alike. A host starts an [`Inbound`] with the request's head, then only
//! satisfies what each [`Step`] asks (read the body, check a signature,
//! send requests to objects) and hands the result back; it knows no order.
//!
//! The order: CORS (a preflight answered) → an operator's request its own
//! way (body, operator, the admin job) → who is calling (the wrapper's
//! props, else OAuth, at once for a token verified lately, else after a
//! signature check) → the prechecks, once (Origin/Host, sign-in, declared
//! size) → a session's request forwarded by its head, body unread → the
//! body read (up to the limit) → routed: served here, or forwarded.
// Without the `limits` feature the metering here is left out of the build.
#![cfg_attr(
    not(any(feature = "limits", not(target_arch = "wasm32"))),
    allow(dead_code, unused_imports)
)]

use std::cell::RefCell;

#[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
use super::admin::{self, Job, Operator};
use super::auth::{self as host_auth, Authenticated, Signed};
use super::cors::{cors, vary, Cors};
use super::meter::{check, verdict, Check, Metered, LEASE_HEADER, LIMITED_HEADER};
use super::route::{route, route_head, serve_local, Local, Route};
use crate::auth::{Caller, KeyVerifier, SeenTokens, CALLER_HEADER};
use crate::effects::Reply;
use crate::http::{HttpRequest, HttpResponse};
use crate::server::{error_response, Env, Server};

/// What the host does next for a request.
#[must_use = "a step asks the host for something, or holds the answer"]
pub enum Step {
    /// Answer with this (its effects applied first).
    Answer(Reply),
    /// Send `request` to the object `name` and answer with its response.
    /// `unread`: the client's body goes along as it came, never read here.
    Forward {
        /// The object's name.
        name: String,
        /// The request to send it (internal headers set).
        request: HttpRequest,
        /// Whether the body is the client's, still unread.
        unread: bool,
    },
    /// Read the body, keeping at most `limit` bytes and one more (so an
    /// undeclared body over it is seen), and call [`Inbound::body`].
    ReadBody {
        /// The length the request declared, if it did (never over `limit`).
        declared: Option<u64>,
        /// The largest body the server takes.
        limit: usize,
    },
    /// Check a token's signature: call [`Inbound::verify`].
    Verify,
    /// Serve the request here: call [`Inbound::serve`].
    Serve,
    /// Send each request to the object named and hand the responses to
    /// [`Inbound::answers`], in order (an object that did not answer: 502).
    Ask(Vec<(String, HttpRequest)>),
}

enum Stage {
    /// Signing in: a signature is next.
    SignIn,
    /// The body is next, then routing.
    Body,
    /// An operator's request: its body is next, then who sent it.
    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    AdminBody,
    /// An operator's OAuth token is next.
    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    AdminVerify,
    /// An admin job, waiting for the objects it asked.
    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    Admin(Box<Job>),
    /// To be served here (boxed: the typed request is most of it, and the
    /// other stages are small).
    Serve(Box<Local>),
    /// Routed, waiting for its principal's meter to admit it.
    #[cfg_attr(
        not(any(feature = "limits", not(target_arch = "wasm32"))),
        allow(dead_code)
    )]
    Metered(Box<Admission>),
    /// Answered or forwarded.
    Done,
}

/// A routed request its meter was asked about.
struct Admission {
    route: Route,
    metered: Metered,
    /// The meter's object, and the round's lease there.
    lease: (String, String),
    /// Where this isolate keeps the meter's answer, if it does.
    spare: Option<String>,
}

/// Which paths keep their query, decided as the request comes in: a
/// page's (`/approve?elicitationId=…`, read by `host::page`) and the
/// console's do; `/mcp` and the metadata paths never read theirs. A token
/// in a query is refused, never used (OAuth 2.1): the marker says it was
/// there.
fn keep_query(http: &mut HttpRequest) {
    let Some((bare, query)) = http.path.split_once('?') else {
        return;
    };
    let token = query
        .split('&')
        .any(|p| p.split('=').next() == Some("access_token"));
    if bare == "/mcp" || bare.starts_with("/.well-known/") {
        http.path = bare.to_string();
    }
    if token {
        http.headers
            .push((crate::auth::QUERY_TOKEN_HEADER.to_string(), "1".to_string()));
    }
}

/// One request on its way in.
pub struct Inbound {
    http: HttpRequest,
    env: Env,
    stage: Stage,
    /// The caller the host verified (OAuth, the wrapper's props), until
    /// the prechecks take it.
    signed: Option<Signed>,
    /// Who is calling, once the prechecks passed: carried to the server
    /// as a value, never written out and parsed back in this isolate.
    caller: Option<Caller>,
    cors: Vec<(String, String)>,
}

impl Inbound {
    /// Starts `http` (its head: the body is read when a step asks).
    /// `props`: what a wrapping authorization server hands the Worker
    /// (`ctx.props`, JSON); `seen`: tokens whose signature verified lately.
    pub fn start(
        server: &Server,
        http: HttpRequest,
        env: Env,
        props: Option<&str>,
        seen: &SeenTokens,
    ) -> (Self, Step) {
        let mut http = http;
        keep_query(&mut http);
        let mut inbound = Self {
            http,
            env,
            stage: Stage::Done,
            signed: None,
            caller: None,
            cors: Vec::new(),
        };
        // CORS first: a preflight is answered; an allowed origin's headers
        // go on whatever the request is answered with ([`Inbound::cors`]).
        match cors(server, &inbound.http) {
            Cors::Preflight(resp) => return (inbound, answered(Step::Answer(Reply::new(resp)))),
            Cors::Headers(headers) => inbound.cors = headers,
            Cors::Nothing => {}
        }
        let step = answered(inbound.begin(server, props, seen));
        (inbound, step)
    }

    /// The CORS headers the answer gets (empty for none), taken once.
    pub fn take_cors(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.cors)
    }

    fn begin(&mut self, server: &Server, props: Option<&str>, seen: &SeenTokens) -> Step {
        // An operator's request goes its own way. A Worker built without
        // the `admin` feature links none of it: its paths are unknown
        // paths (the native test server serves admin either way).
        #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
        if admin::is_admin_path(&self.http.path) {
            self.stage = Stage::AdminBody;
            return self.read_body(server);
        }
        // Read on every request: props arriving while that mode is off
        // are refused, not ignored.
        match host_auth::authenticate_props(server, &mut self.http, props) {
            Ok(signed) => self.signed = signed,
            Err(reply) => return Step::Answer(reply),
        }
        if server.config.sign_in.oauth().is_some() {
            match host_auth::authenticate_now(server, &mut self.http, self.env.now_ms, seen) {
                Authenticated::Yes(signed) => self.signed = signed,
                Authenticated::No(reply) => return Step::Answer(reply),
                Authenticated::Later => {
                    self.stage = Stage::SignIn;
                    return Step::Verify;
                }
            }
        }
        self.signed_in(server)
    }

    /// Checks the signature a [`Step::Verify`] asked for (the issuer's
    /// keys fetched when they must be; a verified token remembered in
    /// `seen`), and goes on.
    pub async fn verify(
        &mut self,
        server: &Server,
        verifier: &dyn KeyVerifier,
        seen: &RefCell<SeenTokens>,
    ) -> Step {
        answered(self.verified(server, verifier, seen).await)
    }

    async fn verified(
        &mut self,
        server: &Server,
        verifier: &dyn KeyVerifier,
        seen: &RefCell<SeenTokens>,
    ) -> Step {
        let now_ms = self.env.now_ms;
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::SignIn => {
                let verdict =
                    host_auth::authenticate(server, &mut self.http, now_ms, verifier, seen).await;
                match verdict {
                    Authenticated::No(reply) => Step::Answer(reply),
                    Authenticated::Yes(signed) => {
                        self.signed = signed;
                        self.signed_in(server)
                    }
                    Authenticated::Later => Step::Answer(Reply::new(HttpResponse::empty(500))),
                }
            }
            #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
            Stage::AdminVerify => {
                match admin::verify(server, &self.http, now_ms, verifier, seen).await {
                    Ok(name) => self.start_job(server, &name),
                    Err(reply) => Step::Answer(reply),
                }
            }
            _ => Step::Answer(Reply::new(HttpResponse::empty(500))),
        }
    }

    /// The caller known: the prechecks, then where the request goes.
    fn signed_in(&mut self, server: &Server) -> Step {
        // The one place a request to `/mcp` is held to Origin/Host, its
        // sign-in and its declared size. Everything past here (the
        // objects too) trusts it.
        if self.http.path == "/mcp" {
            let signed = self.signed.as_ref().map(|s| s.caller.clone());
            match server.precheck(&self.http, signed) {
                Ok(caller) => self.caller = Some(caller),
                Err(e) => return Step::Answer(Reply::new(error_response(&e, None))),
            }
        } else if let Some(signed) = self.signed.take() {
            // A page reads its caller where it is served, in the Worker or
            // in the object keeping its call, the same way.
            (self.http.headers).push((CALLER_HEADER.to_string(), signed.header()));
        }
        // A session's request goes on by its head; its object reads the body.
        if let Some(Route::Object { name, request }) = route_head(server, &self.http, &self.env) {
            return self.forward(name, request, true);
        }
        let over = self
            .declared()
            .is_some_and(|n| n > server.config.max_body_bytes as u64);
        if matches!(self.http.method.as_str(), "GET" | "HEAD") || over {
            // No body to read; one over the cap is refused unread.
            return self.route(server);
        }
        self.stage = Stage::Body;
        self.read_body(server)
    }

    fn declared(&self) -> Option<u64> {
        self.http
            .header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
    }

    fn read_body(&self, server: &Server) -> Step {
        let limit = server.config.max_body_bytes;
        Step::ReadBody {
            declared: self.declared().filter(|n| *n <= limit as u64),
            limit,
        }
    }

    /// The body a [`Step::ReadBody`] asked for (`Err`: why it could not be
    /// read), and what is next.
    pub fn body(&mut self, server: &Server, body: Result<Vec<u8>, String>) -> Step {
        answered(self.body_read(server, body))
    }

    fn body_read(&mut self, server: &Server, body: Result<Vec<u8>, String>) -> Step {
        let body = match body {
            Ok(b) => b,
            Err(why) => {
                let e = crate::error::McpError::invalid_request(format!(
                    "Invalid Request: unreadable request: {why}"
                ));
                return Step::Answer(Reply::new(error_response(&e, None)));
            }
        };
        self.http.body = body;
        match std::mem::replace(&mut self.stage, Stage::Done) {
            #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
            Stage::AdminBody => match admin::operator(server, &self.http, self.env.now_ms) {
                Operator::Yes(name) => self.start_job(server, &name),
                Operator::No(reply) => Step::Answer(reply),
                Operator::Verify => {
                    self.stage = Stage::AdminVerify;
                    Step::Verify
                }
            },
            _ => {
                // A body of undeclared length is held to the limit once read.
                if self.caller.is_some() {
                    if let Err(e) = server.check_size(&self.http) {
                        return Step::Answer(Reply::new(error_response(&e, None)));
                    }
                }
                self.route(server)
            }
        }
    }

    fn route(&mut self, server: &Server) -> Step {
        let (route, metered) = route(server, &self.http, &self.env);
        #[cfg(not(any(feature = "limits", not(target_arch = "wasm32"))))]
        let metered: Option<Metered> = metered.and(None);
        let Some(m) = metered else {
            return self.go(route, None);
        };
        // A call its principal's limits apply to is admitted first: from
        // what this isolate holds, else by its meter.
        let principal = self.caller.as_ref().map_or("", |c| c.principal.as_str());
        let lease = || format!("l{}", crate::server::new_call_id(&self.env));
        match check(server, principal, &m, lease, self.env.now_ms) {
            Check::Free | Check::Spare => self.go(route, None),
            Check::Refused { refusal, logged } => self.refuse(server, route, &m, &refusal, logged),
            Check::Ask {
                meter,
                request,
                lease,
                spare,
            } => {
                self.stage = Stage::Metered(Box::new(Admission {
                    route,
                    metered: m,
                    lease: (meter.clone(), lease),
                    spare,
                }));
                Step::Ask(vec![(meter, request)])
            }
        }
    }

    /// Serves or forwards a routed request, under `lease` if its meter
    /// gave one: the lease goes where the round runs, which releases it.
    fn go(&mut self, route: Route, lease: Option<(String, String)>) -> Step {
        let header =
            lease.map(|(meter, lease)| (LEASE_HEADER.to_string(), format!("{meter} {lease}")));
        match route {
            Route::Local(local) => {
                self.http.headers.extend(header);
                self.stage = Stage::Serve(Box::new(local));
                Step::Serve
            }
            Route::Object { name, mut request } => {
                request.headers.extend(header);
                self.forward(name, request, false)
            }
        }
    }

    #[cfg(any(feature = "limits", not(target_arch = "wasm32")))]
    /// The meter's answer: run it, or refuse it (`-32013`, 429) before
    /// anything runs or is stored.
    fn admitted(&mut self, server: &Server, a: Admission, answer: Option<&HttpResponse>) -> Step {
        let v = answer.map_or_else(crate::limits::Verdict::admitted, verdict);
        if let Some(key) = &a.spare {
            server.spare.keep(key, &v);
        }
        match v {
            crate::limits::Verdict::Refused(r) => {
                self.refuse(server, a.route, &a.metered, &r, false)
            }
            // The lease goes with the round only when the meter keeps it.
            crate::limits::Verdict::Admitted(ok) => self.go(a.route, ok.leased.then_some(a.lease)),
        }
    }

    /// Refuses a call over a limit, logged (unless `logged`: a window's
    /// refusal this isolate answers counts towards one line for the
    /// window). A new task is kept instead, `working`, and runs when its
    /// meter admits it.
    fn refuse(
        &mut self,
        server: &Server,
        route: Route,
        m: &Metered,
        refusal: &crate::limits::Refusal,
        logged: bool,
    ) -> Step {
        if !logged {
            let principal = self.caller.as_ref().map_or("", |c| c.principal.as_str());
            server.log(super::meter::refusal_line(server, principal, refusal, 1));
        }
        match route {
            Route::Object { name, mut request } if m.task => {
                let text = serde_json::to_string(refusal).unwrap_or_default();
                request.headers.push((LIMITED_HEADER.to_string(), text));
                self.forward(name, request, false)
            }
            _ => Step::Answer(Reply::new(error_response(&refusal.error(), Some(&m.id)))),
        }
    }

    /// Forwards to object `name`, with the caller the host verified in an
    /// internal header: the one place it is written out.
    fn forward(&mut self, name: String, mut request: HttpRequest, unread: bool) -> Step {
        if let Some(signed) = self.signed.take() {
            request
                .headers
                .push((CALLER_HEADER.to_string(), signed.header()));
        }
        self.stage = Stage::Done;
        Step::Forward {
            name,
            request,
            unread,
        }
    }

    /// Serves the request here, as a [`Step::Serve`] asked: the reply,
    /// whose effects the host applies.
    pub async fn serve(&mut self, server: &Server) -> Reply {
        let mut reply = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Serve(local) => {
                serve_local(server, &self.http, &self.env, *local, self.caller.take()).await
            }
            _ => Reply::new(HttpResponse::empty(500)),
        };
        // The round ran here: its place at the meter is free.
        if let Some((_, value)) = self.http.headers.iter().find(|(k, _)| k == LEASE_HEADER) {
            super::meter::release(server, value);
        }
        vary(&mut reply.response);
        reply
    }

    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    fn start_job(&mut self, server: &Server, operator: &str) -> Step {
        let (job, step) = admin::start(server, &self.http, operator, &self.env);
        self.stage = Stage::Admin(Box::new(job));
        self.admin_step(step)
    }

    /// The responses to a [`Step::Ask`], in its order.
    #[cfg_attr(
        all(target_arch = "wasm32", not(feature = "admin")),
        allow(unused_variables)
    )]
    pub fn answers(&mut self, server: &Server, answers: Vec<HttpResponse>) -> Step {
        #[cfg(any(feature = "limits", not(target_arch = "wasm32")))]
        if let Stage::Metered(_) = &self.stage {
            let Stage::Metered(a) = std::mem::replace(&mut self.stage, Stage::Done) else {
                return Step::Answer(Reply::new(HttpResponse::empty(500)));
            };
            return answered(self.admitted(server, *a, answers.first()));
        }
        let step = match &mut self.stage {
            #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
            Stage::Admin(job) => {
                let step = job.resume(server, answers);
                self.admin_step(step)
            }
            _ => Step::Answer(Reply::new(HttpResponse::empty(500))),
        };
        answered(step)
    }

    #[cfg(any(feature = "admin", not(target_arch = "wasm32")))]
    fn admin_step(&mut self, step: admin::Step) -> Step {
        match step {
            admin::Step::Answer(reply) => {
                self.stage = Stage::Done;
                Step::Answer(reply)
            }
            admin::Step::Ask(asks) => Step::Ask(asks),
        }
    }
}

/// A step as it leaves the pipeline: an answer made here is marked as
/// depending on the `Origin` (an object marks its own).
fn answered(step: Step) -> Step {
    match step {
        Step::Answer(mut reply) => {
            vary(&mut reply.response);
            Step::Answer(reply)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use crate::app::Registry;
    use crate::http::HttpRequest;
    use crate::testing::TestServer;

    fn post(headers: &[(&str, &str)], body: &str) -> HttpRequest {
        let mut all = vec![
            ("host", "127.0.0.1:8787"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        HttpRequest::post("/mcp", &all, body)
    }

    #[test]
    fn the_prechecks_refuse_before_any_object_is_asked() {
        let mut h = TestServer::with_config(Registry::default(), |c| {
            c.max_body_bytes = 64;
        });
        // A session's request over the limit by its declared length: 413,
        // and no object was sent it.
        let sid = ("mcp-session-id", "abc123");
        let r = h.send(post(&[sid, ("content-length", "999")], "{}"));
        assert_eq!(r.status, 413, "{}", r.json);
        // An undeclared body over the limit, held to it once read.
        let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(100));
        let r = h.send(post(&[], &big));
        assert_eq!(r.status, 413, "{}", r.json);
        // A foreign Origin: 403, whatever the request names.
        let r = h.send(post(&[sid, ("origin", "https://evil.example")], "{}"));
        assert_eq!(r.status, 403, "{}", r.json);
        assert_eq!(h.cost().object_requests, 0, "no object was asked");
        assert!(h.objects.is_empty());
        // Within the rules the session request reaches its object (404
        // there: no such session).
        let r = h.send(post(&[sid, ("content-length", "2")], "{}"));
        assert_eq!(r.status, 404, "{}", r.json);
        assert_eq!(h.cost().object_requests, 1);
    }

    #[test]
    fn the_core_decides_which_paths_keep_their_query() {
        let mut h = TestServer::new(Registry::default());
        // `/mcp` with a query is `/mcp` (a list answered), not a 404.
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let mut req = post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
            ],
            body,
        );
        req.path = "/mcp?x=1".into();
        let r = h.send(req.clone());
        assert_eq!(r.status, 200, "{}", r.json);
        // A token in the query is refused, never read.
        req.path = "/mcp?access_token=abc".into();
        let mut h = TestServer::with_config(Registry::default(), |c| {
            c.sign_in = crate::auth::SignIn::from(crate::auth::OAuthConfig {
                issuer: "https://id.example".into(),
                ..Default::default()
            });
        });
        let r = h.send(req);
        assert_eq!(r.status, 401, "{}", r.json);
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains("invalid_request"), "{challenge}");
    }
}
