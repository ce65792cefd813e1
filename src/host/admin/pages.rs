//! The console's requests: which operation each page is, the checks a
//! state-changing post passes (same origin, the form token), and the
//! answers (rendered by `admin::console`, with the page headers every
//! page of this server gets: a CSP with `frame-ancestors 'none'`,
//! `X-Frame-Options: DENY`, `no-referrer`, `nosniff`, `no-store`).

use super::pass;
use super::request::{filter_of, query, Enter, Op};
use crate::admin::{console, CallDetail, Filter, Listing, Versions};
use crate::effects::Reply;
use crate::http::{Body, HttpRequest, HttpResponse};
use crate::server::Server;

pub(super) use console::enc;

/// What a console answer needs: the form token its forms carry.
pub(crate) struct Page {
    csrf: String,
}

fn html(status: u16, body: String) -> Reply {
    let mut headers = vec![(
        "content-type".to_string(),
        "text/html; charset=utf-8".to_string(),
    )];
    headers.extend(
        crate::host::page::SECURITY_HEADERS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    Reply::new(HttpResponse {
        status,
        headers,
        body: Body::Bytes(body.into_bytes()),
    })
}

fn see_other(to: &str) -> HttpResponse {
    let mut r = html(303, String::new()).response;
    r.headers.push(("location".into(), to.to_string()));
    r
}

impl Page {
    pub(super) fn overview(
        &self,
        listing: &Listing,
        filter: &Filter,
        versions: &Versions,
    ) -> Reply {
        let paused = &listing.paused_tools;
        html(
            200,
            console::overview(listing, filter, paused, versions, &self.csrf),
        )
    }

    pub(super) fn call(&self, detail: &CallDetail, now_ms: u64) -> Reply {
        html(200, console::call_page(detail, now_ms, &self.csrf))
    }

    pub(super) fn limits(&self, principals: &[serde_json::Value]) -> Reply {
        html(200, console::limits_page(principals))
    }

    pub(super) fn message(&self, status: u16, title: &str, message: &str) -> Reply {
        html(status, console::message_page(title, message))
    }

    /// After a post: back to a page (303), so a reload does not post again.
    pub(super) fn back_to(&self, path: &str) -> Reply {
        Reply::new(see_other(path))
    }
}

/// Whether a post comes from this server's own pages: the browser says so
/// (`Sec-Fetch-Site: same-origin`, or an `Origin` of this host), and its
/// form token is the one the page was served with.
fn same_site_post(server: &Server, req: &HttpRequest, cookie: &str) -> bool {
    let host = req.header("host").unwrap_or_default();
    let origin_ok = match req.header("origin") {
        Some(o) if o != "null" => o
            .split_once("://")
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host)),
        _ => req.header("sec-fetch-site") == Some("same-origin"),
    };
    let fields: Vec<(String, String)> = form_urlencoded::parse(&req.body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let token = fields
        .iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.as_str())
        .unwrap_or_default();
    let expected = pass::form_token(server, cookie);
    origin_ok && !expected.is_empty() && crate::auth::ct_eq(token.as_bytes(), expected.as_bytes())
}

/// A console request's operation (or its answer when it needs none).
pub(super) fn parse(
    server: &Server,
    req: &HttpRequest,
    path: &str,
    now_ms: u64,
) -> Result<(Op, Page), Reply> {
    if path == "/admin/enter" && req.method == "GET" {
        let page = Page {
            csrf: String::new(),
        };
        return enter(server, req, now_ms).map(|op| (op, page));
    }
    // Only a browser signed in to the console gets pages: a bearer token
    // is for the API (its posts would carry no form token).
    let Some(cookie) = pass::cookie(req).filter(|_| req.header("authorization").is_none()) else {
        return Err(super::not_there(req));
    };
    let page = Page {
        csrf: pass::form_token(server, cookie),
    };
    let rest = path.trim_start_matches("/admin");
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let decode = |s: &str| {
        form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    if req.method == "POST" && !same_site_post(server, req, cookie) {
        return Err(page.message(
            403,
            "Refused",
            "This form did not come from this console (open the console again and retry).",
        ));
    }
    let op = match (req.method.as_str(), segments.as_slice()) {
        ("GET", []) => {
            let (filter, limit, cursor) = filter_of(&query(&req.path))
                .map_err(|why| page.message(400, "Bad filter", &why))?;
            Op::List {
                filter,
                limit,
                cursor,
            }
        }
        ("GET", ["calls", id]) => Op::Show(decode(id)),
        ("GET", ["limits"]) => Op::Limits {
            principal: None,
            raise: None,
        },
        ("POST", ["calls", id, "cancel"]) => Op::Cancel {
            ids: Some(vec![decode(id)]),
            filter: Filter::default(),
        },
        ("POST", ["calls", id, action @ ("pause" | "resume")]) => Op::Hold {
            ids: vec![decode(id)],
            hold: *action == "pause",
        },
        ("POST", ["calls", id, act @ ("answer" | "rewind")]) => {
            let field = |name: &str| {
                form_urlencoded::parse(&req.body)
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            let answer = match (*act, field("answer")) {
                ("answer", Some(text)) => Some(crate::json::from_str(&text).map_err(|e| {
                    page.message(400, "Bad answer", &format!("The answer is not JSON: {e}"))
                })?),
                ("answer", None) => {
                    return Err(page.message(400, "Bad answer", "No answer given."))
                }
                _ => None,
            };
            Op::Outside {
                id: decode(id),
                key: field("key").unwrap_or_default(),
                answer,
            }
        }
        ("POST", ["tools", tool, action @ ("pause" | "resume")]) => {
            let tool = decode(tool);
            if server.registry.find_tool(&tool).is_none() {
                return Err(page.message(404, "Not found", "No such tool is served."));
            }
            Op::Pause {
                tool,
                pause: *action == "pause",
            }
        }
        _ => return Err(super::not_there(req)),
    };
    Ok((op, page))
}

/// `GET /admin/enter?pass=…`: a sign-in link opened. A pass that verifies
/// (for an operator still in force) is spent next ([`Op::Enter`]); once
/// spent, it becomes the console's cookie and the browser goes on to the
/// console (the pass leaves the address bar at once).
fn enter(server: &Server, req: &HttpRequest, now_ms: u64) -> Result<Op, Reply> {
    let pass = query(&req.path)
        .into_iter()
        .find(|(k, _)| k == "pass")
        .map(|(_, v)| v);
    let link = pass.and_then(|p| pass::open_link(server, &p, now_ms));
    let Some((link, cookie)) = link.and_then(|l| pass::console(server, &l, now_ms).map(|c| (l, c)))
    else {
        return Err(super::not_there(req));
    };
    let secure = !crate::auth::is_loopback(req.header("host").unwrap_or_default());
    Ok(Op::Enter(Box::new(Enter {
        nonce: link.nonce,
        until_ms: link.exp,
        set_cookie: pass::set_cookie(&cookie, secure),
    })))
}

/// The answer to a spent link's first use: the cookie, and on to the
/// console.
pub(super) fn entered(set_cookie: &str) -> Reply {
    let mut r = see_other("/admin");
    r.headers
        .push(("set-cookie".into(), set_cookie.to_string()));
    Reply::new(r)
}
