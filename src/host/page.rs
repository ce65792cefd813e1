//! Pages beside `/mcp` ([`Registry::page`](crate::Registry::page)), and a
//! page's completion of the URL-mode elicitation its request names.
//!
//! A page request names an elicitation by its `elicitationId` parameter
//! (query or form). The router sends it to the object that keeps the call
//! only when the id verifies and the page's caller is the call's; anything
//! else is served in the Worker, where a completion is refused: so a forged
//! id, or someone else's, opens no object and learns nothing (the same
//! answer as for an unknown one). In the object the completion goes into
//! the call's journal: a durable call's (its client's next retry goes on),
//! a session's (the next round runs now and goes to its stream), a task's
//! (its alarm runs it now). A second completion finds nothing waiting.

use serde_json::{Map, Value};

use super::outside::NotTaken;
use super::Stores;
use crate::app::page::{Page, PageReply, Question};
use crate::auth::Caller;
use crate::effects::{Effect, Reply};
use crate::elicitation::{self, Home, IdClaims};
use crate::engine::{Journal, Outside};
use crate::error::{ErrorKind, McpError};
use crate::http::{Body, HttpRequest, HttpResponse};
use crate::server::{error_response, Env, Server};
use crate::store::CallStatus;

/// The parameter a page request names its elicitation with.
pub const ELICITATION_PARAM: &str = "elicitationId";

/// The path of a page request without its query (the Worker keeps the
/// query on page paths: `/approve?elicitationId=…`).
pub fn page_path(path: &str) -> &str {
    path.split_once('?').map_or(path, |(p, _)| p)
}

/// Whether `path` is a page this server serves.
pub fn is_page(server: &Server, path: &str) -> bool {
    // Asked of every request: /mcp (nearly all of them) costs a compare.
    path != "/mcp"
        && !server.registry.pages.is_empty()
        && server.registry.find_page(page_path(path)).is_some()
}

fn pairs(s: &str) -> Pairs {
    form_urlencoded::parse(s.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Name-value pairs, in order.
type Pairs = Vec<(String, String)>;

/// The query and (for a form POST) the form fields of a page request.
fn fields(req: &HttpRequest) -> (Pairs, Pairs) {
    let query = req
        .path
        .split_once('?')
        .map_or(Vec::new(), |(_, q)| pairs(q));
    let is_form = req
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let form = if req.method == "POST" && is_form {
        pairs(&String::from_utf8_lossy(&req.body))
    } else {
        Vec::new()
    };
    (query, form)
}

/// The elicitation a page request's fields name, if it is one this server
/// issued to this caller: its id and what it says.
fn named(
    server: &Server,
    query: &Pairs,
    form: &Pairs,
    caller: &Caller,
) -> Option<(String, IdClaims)> {
    let (id, claims) = linked(server, query, form)?;
    (claims.principal == elicitation::principal_digest(&caller.principal)).then_some((id, claims))
}

/// The elicitation a request's fields name, if its id verifies (whoever
/// is asking).
fn linked(server: &Server, query: &Pairs, form: &Pairs) -> Option<(String, IdClaims)> {
    let (_, id) = form
        .iter()
        .chain(query)
        .find(|(k, _)| k == ELICITATION_PARAM)?;
    let claims = elicitation::open(&server.config.keys, id)?;
    Some((id.clone(), claims))
}

/// Who a page request comes from.
enum Visitor {
    /// Authenticated like an MCP request (anyone, on an open server), and
    /// the elicitation it names if it is this caller's.
    Caller(Caller, Option<(String, IdClaims)>),
    /// A browser with a live page pass for the elicitation it names.
    Pass(String, IdClaims),
    /// A browser with no credentials on a server with sign-in, holding a
    /// valid link: it may exchange the link for a pass, once.
    Link(String, IdClaims),
    /// A browser with no credentials holding a link that does not verify:
    /// told what a used link is told, no more.
    Unknown,
}

/// Who `req` comes from. A browser that follows a link sends no
/// `Authorization`: on a server with sign-in it is let in only with a
/// verified link (for the pass exchange) or a pass for that link; with
/// neither it gets the refusal an MCP request would get.
fn visitor(
    server: &Server,
    req: &HttpRequest,
    query: &Pairs,
    form: &Pairs,
    now_ms: u64,
) -> Result<Visitor, McpError> {
    match server.precheck_page(req) {
        Ok(caller) => {
            let named = named(server, query, form, &caller);
            Ok(Visitor::Caller(caller, named))
        }
        Err(e) if e.kind == ErrorKind::Unauthorized && req.header("authorization").is_none() => {
            let Some((id, claims)) = linked(server, query, form) else {
                let names_one = form
                    .iter()
                    .chain(query)
                    .any(|(k, _)| k == ELICITATION_PARAM);
                return if names_one {
                    Ok(Visitor::Unknown)
                } else {
                    Err(e)
                };
            };
            let pass = cookies(req)
                .into_iter()
                .find(|(k, _)| *k == elicitation::pass_cookie_name(&id))
                .and_then(|(_, v)| elicitation::open_pass(&server.config.keys, &v, &id, now_ms));
            Ok(match pass {
                Some(p) if p == claims.principal => Visitor::Pass(id, claims),
                _ => Visitor::Link(id, claims),
            })
        }
        Err(e) => Err(e),
    }
}

/// The elicitation a page request is routed by (to the object that keeps
/// its call): one of the caller's, one its pass opens, or a link a
/// browser without credentials brings to exchange (a GET).
pub(super) fn routed_elicitation(
    server: &Server,
    req: &HttpRequest,
    now_ms: u64,
) -> Option<(String, IdClaims)> {
    let (query, form) = fields(req);
    match visitor(server, req, &query, &form, now_ms).ok()? {
        Visitor::Caller(_, named) => named,
        Visitor::Pass(id, claims) => Some((id, claims)),
        Visitor::Link(id, claims) => (req.method == "GET").then_some((id, claims)),
        Visitor::Unknown => None,
    }
}

/// The request's cookies.
fn cookies(req: &HttpRequest) -> Vec<(String, String)> {
    req.header("cookie")
        .map(|c| {
            c.split(';')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Where a page request is served.
pub enum Keeper<'a> {
    /// In the Worker: no elicitation of this caller's named.
    Worker,
    /// In the object that keeps the named elicitation's call.
    Object(&'a Stores<'a>),
}

/// Serves a page request.
pub async fn serve(server: &Server, req: &HttpRequest, env: &Env, keeper: Keeper<'_>) -> Reply {
    let Some(route) = server.registry.find_page(page_path(&req.path)) else {
        return refused(404);
    };
    if !matches!(req.method.as_str(), "GET" | "POST") {
        return Reply::new(page_response(
            405,
            "text/plain; charset=utf-8",
            "Method not allowed".into(),
        ));
    }
    let (query, form) = fields(req);
    let (caller, named) = match visitor(server, req, &query, &form, env.now_ms) {
        Ok(Visitor::Caller(caller, named)) => (caller, named),
        // A pass stands for the call's user on this one page; who that is
        // by name only a session's object knows (a durable call and a task
        // keep a digest, or run as their own caller).
        Ok(Visitor::Pass(id, claims)) => {
            let owner = match (&claims.home, &keeper) {
                (Home::Session(..), Keeper::Object(stores)) => match stores.session.meta() {
                    Ok(meta) => meta.map(|m| m.principal).unwrap_or_default(),
                    Err(e) => return Reply::new(page_error(&e)),
                },
                _ => String::new(),
            };
            let caller = Caller {
                principal: owner,
                ..Caller::default()
            };
            (caller, Some((id, claims)))
        }
        Ok(Visitor::Link(id, claims)) => return exchange(server, req, env, keeper, &id, &claims),
        Ok(Visitor::Unknown) => return refused(404),
        Err(e) => return Reply::new(page_error(&e)),
    };
    let stores = match keeper {
        Keeper::Object(stores) => Some(stores),
        Keeper::Worker => None,
    };
    let question = match (&named, stores) {
        (Some((id, claims)), Some(stores)) => {
            match with_journal(stores, &claims.home, env.now_ms, |j| {
                (j.pending_url(&claims.key, id).map(question_of), false)
            }) {
                Ok(q) => q.flatten(),
                Err(e) => return Reply::new(page_error(&e)),
            }
        }
        _ => None,
    };
    let page = Page {
        method: req.method.clone(),
        path: page_path(&req.path).to_string(),
        query,
        form,
        caller: caller.clone(),
        elicitation: named.as_ref().map(|(id, _)| id.clone()),
        question,
        cookies: cookies(req),
    };
    let reply: PageReply = (route.handler)(&page);
    let response = reply_response(&reply, &page.path, https(req));
    let Some(completion) = reply.completion.clone() else {
        return Reply::new(response);
    };
    let (Some((id, claims)), Some(stores)) = (named, stores) else {
        return refused(404);
    };
    let sealed = if completion.secrets.is_empty() {
        None
    } else {
        match elicitation::seal(&server.config.keys, &completion.secrets, &env.random) {
            Some(s) => Some(s),
            None => return Reply::new(page_error(&McpError::internal("sealing failed"))),
        }
    };
    let done = complete(
        server,
        env,
        stores,
        &caller,
        req,
        &id,
        &claims,
        completion.data,
        sealed,
    )
    .await;
    match done {
        Ok(Ok(effects)) => Reply::new(response).with_all(effects),
        Ok(Err(status)) => refused(status),
        Err(e) => Reply::new(page_error(&e)),
    }
}

/// A browser without credentials brings a link (a GET, on a server with
/// sign-in): the first time, in the object that keeps the call, the link
/// is marked opened and exchanged for a page pass (an HttpOnly cookie for
/// this page's path), and the browser is sent back to the same URL with
/// it. Any later exchange of the same link, or of one no longer waiting,
/// gets the answer an unknown link gets.
fn exchange(
    server: &Server,
    req: &HttpRequest,
    env: &Env,
    keeper: Keeper<'_>,
    id: &str,
    claims: &IdClaims,
) -> Reply {
    let Keeper::Object(stores) = keeper else {
        return refused(404);
    };
    if req.method != "GET" {
        return refused(404);
    }
    let opened = with_journal(stores, &claims.home, env.now_ms, |j| {
        let first = j.open_link(&claims.key, id);
        (first, first)
    });
    match opened {
        Ok(Some(true)) => {}
        Ok(_) => return refused(404),
        Err(e) => return Reply::new(page_error(&e)),
    }
    let Some(pass) = elicitation::pass(&server.config.keys, id, claims, env.now_ms) else {
        return Reply::new(page_error(&McpError::internal(
            "no state key is configured",
        )));
    };
    let path = page_path(&req.path);
    let cookie = crate::app::Cookie::new(elicitation::pass_cookie_name(id), pass)
        .max_age(elicitation::PASS_TTL_MS / 1000);
    // The same URL again (a page's path keeps its query), now with the pass.
    let reply = PageReply::redirect(req.path.clone()).cookie(cookie);
    Reply::new(reply_response(&reply, path, https(req)))
}

/// Whether the server is reached over https (anything but loopback).
fn https(req: &HttpRequest) -> bool {
    crate::auth::origin_of(req.header("host")).starts_with("https://")
}

/// What a pending URL elicitation asks, for its page.
fn question_of(request: &crate::engine::InputRequest) -> Question {
    Question {
        message: request.params["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        details: request.params["_meta"][crate::engine::PAGE_DETAILS_META].clone(),
    }
}

/// Runs `f` on the journal of the paused call kept at `home` (`None` when
/// there is no such call waiting), and stores the journal when `f` says
/// it changed it.
fn with_journal<R>(
    stores: &Stores<'_>,
    home: &Home,
    now_ms: u64,
    f: impl FnOnce(&mut Journal) -> (R, bool),
) -> Result<Option<R>, McpError> {
    match home {
        Home::Call(call_id) => {
            let Some(mut call) = stores.call.load(call_id)? else {
                return Ok(None);
            };
            if call.status == CallStatus::Completed {
                return Ok(None);
            }
            let (r, changed) = f(&mut call.journal);
            if changed {
                call.updated_ms = now_ms;
                stores.call.save(call_id, &call)?;
            }
            Ok(Some(r))
        }
        Home::Session(_, call_id) => {
            let found = stores
                .session
                .calls()?
                .into_iter()
                .find(|c| c.call_id == *call_id && !c.state.is_final());
            let Some(mut call) = found else {
                return Ok(None);
            };
            let (r, changed) = f(&mut call.journal);
            if changed {
                stores.session.put_call(&call)?;
            }
            Ok(Some(r))
        }
        Home::Task(_) => {
            let Some(mut task) = stores.task.load()? else {
                return Ok(None);
            };
            if task.status.is_final() {
                return Ok(None);
            }
            let (r, changed) = f(&mut task.journal);
            if changed {
                task.updated_ms = now_ms;
                stores.task.save(&task)?;
            }
            Ok(Some(r))
        }
    }
}

/// Records the completion where the call is kept; `Err(status)` when it
/// is not waiting for it (404) or its round is running (409).
#[allow(clippy::too_many_arguments)]
async fn complete(
    server: &Server,
    env: &Env,
    stores: &Stores<'_>,
    caller: &Caller,
    req: &HttpRequest,
    id: &str,
    claims: &IdClaims,
    content: Map<String, Value>,
    sealed: Option<String>,
) -> Result<Result<Vec<Effect>, u16>, McpError> {
    let turn = crate::session::Turn {
        caller: caller.clone(),
        resource: server.resource_of(req),
        origin: crate::auth::origin_of(req.header("host")),
    };
    let what = Outside::Page {
        key: claims.key.clone(),
        elicitation_id: id.to_string(),
        content,
        sealed,
    };
    let done = super::outside::deliver(server, env, stores, Some(turn), &claims.home, what).await?;
    Ok(done.map_err(|not| match not {
        NotTaken::Busy => 409,
        NotTaken::No(_) => 404,
    }))
}

/// The headers every page response and refusal carries unless the page
/// says otherwise ([`PageReply::header`]): never framed (clickjacking of an
/// approval button), no scripts or requests to anywhere by default, forms
/// post only here, no referrer (the URL holds the elicitation's id), no
/// type sniffing, never cached (a page that completes something).
pub(crate) const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "content-security-policy",
        "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("cache-control", "no-store"),
];

/// Header names a page may not set: what the runtime writes itself or
/// what only the Worker may send.
fn reserved(name: &str) -> bool {
    matches!(
        name,
        "content-length" | "transfer-encoding" | "connection" | "set-cookie" | "content-type"
    ) || name.starts_with("x-durable-mcp-")
}

fn page_response(status: u16, content_type: &str, body: Vec<u8>) -> HttpResponse {
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    headers.extend(
        SECURITY_HEADERS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    HttpResponse {
        status,
        headers,
        body: Body::Bytes(body),
    }
}

/// A page's reply as its response: the defaults, then what it set.
fn reply_response(reply: &PageReply, page_path: &str, https: bool) -> HttpResponse {
    let mut resp = page_response(
        reply.status,
        &reply.content_type,
        reply.body.as_bytes().to_vec(),
    );
    for (name, value) in &reply.headers {
        if reserved(name) || value.contains(['\r', '\n']) {
            continue;
        }
        resp.headers.retain(|(k, _)| k != name);
        resp.headers.push((name.clone(), value.clone()));
    }
    for cookie in &reply.cookies {
        resp.headers
            .push(("set-cookie".to_string(), cookie.header(page_path, https)));
    }
    resp
}

/// An error on a page path (a refused sign-in, a bad Origin): the JSON-RPC
/// error, with the page headers.
pub(super) fn page_error(e: &McpError) -> HttpResponse {
    let mut resp = error_response(e, None);
    for (k, v) in SECURITY_HEADERS {
        resp.headers.retain(|(n, _)| n != k);
        resp.headers.push((k.to_string(), v.to_string()));
    }
    resp
}

/// The same answer for a forged id, someone else's, an unknown call and
/// one no longer waiting (404); 409 for one whose round is running.
fn refused(status: u16) -> Reply {
    let body = if status == 409 {
        "<!doctype html><title>Busy</title><p>This request is being handled right now: try again in a moment.</p>"
    } else {
        "<!doctype html><title>Not found</title><p>This link is not valid, or there is nothing waiting for it any more.</p>"
    };
    Reply::new(page_response(
        status,
        "text/html; charset=utf-8",
        body.as_bytes().to_vec(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::app::{Cookie, Page, PageReply, Registry};
    use crate::http::HttpRequest;
    use crate::testing::TestServer;

    fn get(s: &mut TestServer, path: &str, cookie: Option<&str>) -> crate::testing::TestReply {
        let mut headers = vec![("host".to_string(), "mcp.example.com".to_string())];
        if let Some(c) = cookie {
            headers.push(("cookie".into(), c.into()));
        }
        s.send(HttpRequest {
            method: "GET".into(),
            path: path.into(),
            headers,
            body: Vec::new(),
        })
    }

    fn server() -> TestServer {
        let mut r = Registry::new();
        r.page("/signin", |page: &Page| match page.cookie("session") {
            Some(s) => PageReply::html(format!("<p>back with {s}</p>")),
            None => PageReply::redirect("https://idp.example/authorize?state=x")
                .cookie(Cookie::new("session", "s 1;x").max_age(60).strict())
                .header("X-Frame-Options", "SAMEORIGIN")
                .header("content-length", "1")
                .header("x-durable-mcp-call-id", "forged"),
        });
        // Reached as a deployed server is (https): any host.
        TestServer::with_config(r, |c| c.allowed_hosts = crate::http::AllowList::default())
    }

    #[test]
    fn a_page_can_redirect_set_a_cookie_and_change_a_default_header() {
        let mut s = server();
        let r = get(&mut s, "/signin", None);
        assert_eq!(r.status, 303);
        assert_eq!(
            r.header("location"),
            Some("https://idp.example/authorize?state=x")
        );
        assert_eq!(
            r.header("set-cookie"),
            Some("session=s%201%3Bx; Path=/signin; HttpOnly; SameSite=Strict; Max-Age=60; Secure")
        );
        // The page's own value replaces the default; the rest stay.
        assert_eq!(r.header("x-frame-options"), Some("SAMEORIGIN"));
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert!(r
            .header("content-security-policy")
            .is_some_and(|c| c.contains("frame-ancestors 'none'")));
        // What the runtime writes or only the Worker may send is not the
        // page's to set.
        assert_eq!(r.header("content-length"), None);
        assert_eq!(r.header("x-durable-mcp-call-id"), None);
        let back = get(&mut s, "/signin", Some("other=1; session=abc"));
        assert_eq!(back.status, 200);
        assert!(back.text.contains("back with abc"), "{}", back.text);
    }

    #[test]
    fn refusals_carry_the_page_headers_too() {
        let mut s = server();
        for r in [
            s.send(HttpRequest {
                method: "PUT".into(),
                path: "/signin".into(),
                headers: vec![("host".into(), "mcp.example.com".into())],
                body: Vec::new(),
            }),
            s.send(HttpRequest {
                method: "GET".into(),
                path: "/signin".into(),
                headers: vec![
                    ("host".into(), "mcp.example.com".into()),
                    ("origin".into(), "https://evil.example".into()),
                ],
                body: Vec::new(),
            }),
        ] {
            assert!(r.status >= 400, "{}", r.status);
            assert_eq!(r.header("x-frame-options"), Some("DENY"), "{}", r.status);
            assert_eq!(r.header("cache-control"), Some("no-store"));
            assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        }
    }
}
