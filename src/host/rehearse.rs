//! A request served once, to no one, as an isolate starts.
//!
//! V8 compiles a wasm function the first time it is called, so an
//! isolate's first request paid for compiling every function on its way
//! through the server: measured in the cold-start pass, about as much as
//! everything else that request did (docs/PERFORMANCE.md, "Cold starts").
//! The host serves this request while its module loads (the Worker: before
//! it listens; on Cloudflare, during the TLS handshake that brings the
//! first request), so that path is compiled before a client waits on it.
//! It reaches no tool, no store and no other object; what it queued
//! (a log line, a meter's note) is dropped here.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use super::{Inbound, Step};
use crate::auth::SeenTokens;
use crate::http::HttpRequest;
use crate::protocol::versions::MODERN;
use crate::server::{Env, Server};

/// The request: a 2026-07-28 `server/discover` to `/mcp`, what a client
/// of that version sends first. It goes the way of every request (the
/// head's checks, the body's parse, the server's dispatch, a result
/// written) and runs no tool. (In the cold-start pass, a `tools/call` of a
/// tool no server has compiled no more of a real call's path: the first
/// request took as long after either. `ping` was removed in 2026-07-28,
/// and a 2025-11-25 request would open a session.)
const DISCOVER: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":"#,
    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientCapabilities":{}}}}"#
);

/// Serves [`DISCOVER`] to `server` and drops the answer; `now_ms` is the
/// host's clock. Returns the answer's status (for a test: 200 when the
/// server is open, 401 when it asks callers to sign in), `None` if the
/// request had to wait (nothing on its way does).
pub fn rehearse(server: &Server, now_ms: u64) -> Option<u16> {
    let length = DISCOVER.len().to_string();
    let head = HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers: [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "server/discover"),
            ("content-length", length.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        body: Vec::new(),
    };
    let env = Env {
        now_ms,
        random: [0; 16],
        continent: None,
    };
    let (mut inbound, mut step) = Inbound::start(server, head, env, None, &SeenTokens::default());
    if let Step::ReadBody { .. } = step {
        step = inbound.body(server, Ok(DISCOVER.as_bytes().to_vec()));
    }
    let status = match step {
        Step::Answer(reply) => Some(reply.response.status),
        Step::Serve => {
            let mut served = std::pin::pin!(inbound.serve(server));
            match served
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(reply) => Some(reply.response.status),
                Poll::Pending => None,
            }
        }
        _ => None,
    };
    // Nothing of a rehearsal reaches a log or a meter.
    drop(server.take_logs());
    drop(server.take_notes());
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Registry;
    use crate::server::Config;

    fn server(vars: &[(&str, &str)]) -> Server {
        let config = Config::from_lookup(|name| {
            vars.iter()
                .chain(&[("STATE_KEYS", "k1:0123456789abcdef0123456789abcdef")])
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
        .expect("config");
        Server::new(config, Registry::new())
    }

    #[test]
    fn a_rehearsal_is_answered_and_leaves_nothing_queued() {
        let server = server(&[("ROUND_LOGS", "all")]);
        assert_eq!(rehearse(&server, 1_000), Some(200));
        assert!(server.take_logs().is_empty());
        assert!(server.take_notes().is_empty());
    }

    #[test]
    fn a_server_that_asks_callers_to_sign_in_refuses_it_and_logs_nothing() {
        let server = server(&[("API_TOKENS", "alice:secret-token-0123456789")]);
        assert_eq!(rehearse(&server, 1_000), Some(401));
        assert!(server.take_logs().is_empty());
    }
}
