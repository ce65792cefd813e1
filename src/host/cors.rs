//! CORS: what lets a page on another origin (a browser-based client, the
//! MCP Inspector's direct mode) call this server.
//!
//! Decided once per request, before anything else, from the same
//! allow-lists as the Origin/Host check (`ALLOWED_ORIGINS`,
//! `ALLOWED_HOSTS`), so DNS-rebinding protection and CORS cannot disagree:
//! an origin that may call the server is told so, any other is told
//! nothing and its browser refuses the response. The glue applies the
//! plan: it answers a preflight itself, or adds the headers to whatever
//! response the request gets (served here, in an object, or a refusal).
//!
//! No credentials mode: clients send bearer tokens in `Authorization`,
//! never cookies, so `Access-Control-Allow-Credentials` is not sent.

use crate::error::{ErrorKind, McpError};
use crate::http::{check_origin_and_host, HttpRequest, HttpResponse};
use crate::server::{error_response, Server};

/// The methods a browser client uses: POST for messages, GET for a
/// session's stream, DELETE to end a session.
const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// The response headers a client must be able to read: the session id,
/// the negotiated version, the sign-in challenge, and when to retry (an
/// issuer outage).
const EXPOSE_HEADERS: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After";

/// How long a browser may cache a preflight (a day, as browsers cap it
/// lower anyway).
const MAX_AGE_SECONDS: &str = "86400";

/// Request headers a browser may not name in a preflight (forbidden header
/// names) or that the server reads but a page cannot set.
const NOT_FROM_PAGES: [&str; 5] = [
    "content-length",
    "cookie",
    "host",
    "origin",
    "sec-fetch-site",
];

/// What CORS asks of a request.
#[derive(Debug, Clone)]
pub(super) enum Cors {
    /// No `Origin` (not a browser), or an origin that may not call: add
    /// nothing (a refused origin's request is then refused by the Origin
    /// check, and its browser cannot read even that).
    Nothing,
    /// A preflight: answer it with this response, serving nothing.
    Preflight(HttpResponse),
    /// A request from an allowed origin: add these headers to its response.
    Headers(Vec<(String, String)>),
}

/// What CORS asks of `req`.
pub(super) fn cors(server: &Server, req: &HttpRequest) -> Cors {
    let Some(origin) = req.header("origin") else {
        return Cors::Nothing;
    };
    let config = &server.config;
    let allowed = check_origin_and_host(
        Some(origin),
        req.header("host"),
        &config.allowed_origins,
        &config.allowed_hosts,
    )
    .is_ok();
    // A browser preflights every OPTIONS it sends (the method is not
    // CORS-safelisted): an `OPTIONS` with an `Origin` is a preflight.
    if req.method == "OPTIONS" {
        if !allowed {
            let e = McpError::new(ErrorKind::Forbidden, "Forbidden: Origin not allowed");
            return Cors::Preflight(error_response(&e, None));
        }
        let mut resp = HttpResponse::empty(204);
        for (name, value) in response_headers(origin) {
            resp = resp.with_header(&name, value);
        }
        return Cors::Preflight(
            resp.with_header("access-control-allow-methods", ALLOW_METHODS)
                .with_header("access-control-allow-headers", allow_headers(server))
                .with_header("access-control-max-age", MAX_AGE_SECONDS),
        );
    }
    if allowed {
        Cors::Headers(response_headers(origin))
    } else {
        Cors::Nothing
    }
}

/// The headers every response to an allowed `origin` carries.
fn response_headers(origin: &str) -> Vec<(String, String)> {
    vec![
        (
            "access-control-allow-origin".to_string(),
            origin.trim().to_string(),
        ),
        (
            "access-control-expose-headers".to_string(),
            EXPOSE_HEADERS.to_string(),
        ),
        // The answer depends on the origin: a shared cache must not hand one
        // origin's answer to another.
        ("vary".to_string(), "Origin".to_string()),
    ]
}

/// The request headers a page may send: every header the server reads from
/// a client (the fixed ones and each tool's `Mcp-Param-*`), less those a
/// page cannot set.
fn allow_headers(server: &Server) -> String {
    super::client_headers(server)
        .into_iter()
        .filter(|h| !NOT_FROM_PAGES.contains(&h.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Marks `response` as one that depends on the request's `Origin`
/// (`Vary: Origin`), unless it says so already. Every answer gets it,
/// whether CORS headers went on it or not: an answer to no `Origin`, or
/// to a refused one, must not be handed by a shared cache to an origin
/// that would have been answered with them (or the reverse).
pub(crate) fn vary(response: &mut HttpResponse) {
    let has = response.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("vary")
            && v.split(',')
                .any(|p| p.trim().eq_ignore_ascii_case("origin") || p.trim() == "*")
    });
    if !has {
        response
            .headers
            .push(("vary".to_string(), "Origin".to_string()));
    }
}

/// Sets `cors` in a response's `headers` (a header it already has, such
/// as the metadata's `*` or a challenge's exposed header, is replaced).
pub fn apply(headers: &mut Vec<(String, String)>, cors: Vec<(String, String)>) {
    for (name, value) in cors {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        headers.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Registry;
    use crate::http::AllowList;
    use crate::server::Config;

    fn server(origins: &str) -> Server {
        let config = Config {
            allowed_origins: AllowList::parse(origins),
            allowed_hosts: AllowList::loopback(),
            ..Config::default()
        };
        Server::new(config, Registry::default())
    }

    fn request(method: &str, origin: Option<&str>) -> HttpRequest {
        let mut headers = vec![("host".to_string(), "127.0.0.1:8787".to_string())];
        if let Some(o) = origin {
            headers.push(("origin".to_string(), o.to_string()));
        }
        HttpRequest {
            method: method.to_string(),
            path: "/mcp".to_string(),
            headers,
            body: Vec::new(),
        }
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_is_answered() {
        let s = server("http://127.0.0.1:5173");
        let Cors::Preflight(resp) = cors(&s, &request("OPTIONS", Some("http://127.0.0.1:5173")))
        else {
            panic!("not a preflight");
        };
        assert_eq!(resp.status, 204);
        let h = &resp.headers;
        assert_eq!(
            header(h, "access-control-allow-origin"),
            Some("http://127.0.0.1:5173")
        );
        let methods = header(h, "access-control-allow-methods").expect("methods");
        for m in ["GET", "POST", "DELETE"] {
            assert!(methods.contains(m), "{methods}");
        }
        let allowed = header(h, "access-control-allow-headers").expect("headers");
        for name in [
            "content-type",
            "accept",
            "authorization",
            "mcp-protocol-version",
            "mcp-session-id",
            "mcp-method",
            "mcp-name",
            "last-event-id",
        ] {
            assert!(
                allowed.split(", ").any(|a| a == name),
                "{name} in {allowed}"
            );
        }
        assert!(!allowed.contains("host"), "{allowed}");
        assert!(header(h, "access-control-max-age").is_some());
        assert_eq!(header(h, "vary"), Some("Origin"));
    }

    #[test]
    fn an_origin_not_allowed_gets_no_cors_headers() {
        let s = server("http://127.0.0.1:5173");
        let Cors::Preflight(resp) = cors(&s, &request("OPTIONS", Some("http://127.0.0.1:9999")))
        else {
            panic!("not a preflight");
        };
        assert_eq!(resp.status, 403);
        assert!(resp
            .headers
            .iter()
            .all(|(n, _)| !n.starts_with("access-control-allow")));
        assert!(matches!(
            cors(&s, &request("POST", Some("http://evil.example"))),
            Cors::Nothing
        ));
    }

    #[test]
    fn a_request_from_an_allowed_origin_exposes_the_session_id() {
        let s = server("localhost,127.0.0.1");
        let Cors::Headers(h) = cors(&s, &request("POST", Some("http://localhost:3000"))) else {
            panic!("no headers");
        };
        assert_eq!(
            header(&h, "access-control-allow-origin"),
            Some("http://localhost:3000")
        );
        let exposed = header(&h, "access-control-expose-headers").expect("exposed");
        for name in ["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"] {
            assert!(exposed.contains(name), "{exposed}");
        }
        // Replaces, not duplicates, what a response already set.
        let mut resp = HttpResponse::empty(200).with_header("access-control-allow-origin", "*");
        apply(&mut resp.headers, h);
        let set: Vec<_> = resp
            .headers
            .iter()
            .filter(|(n, _)| n == "access-control-allow-origin")
            .collect();
        assert_eq!(set.len(), 1);
        assert_eq!(set[0].1, "http://localhost:3000");
    }

    #[test]
    fn no_origin_means_no_cors() {
        let s = server("*");
        assert!(matches!(cors(&s, &request("POST", None)), Cors::Nothing));
        assert!(matches!(cors(&s, &request("OPTIONS", None)), Cors::Nothing));
    }
}
