//! The fixtures worker end to end on the host: durable-mcp's `TestServer`
//! routes requests to in-memory Durable Objects and applies the effects the
//! way the Worker does, with a fake clock.
//!
//! - `oauth.rs`: sign-in: metadata, challenges, tokens, refresh and step-up.
//! - `formats.rs`: what this release stored (format-v1.json) read by later ones.
//! - `answers.rs`: wrong-typed answers refused, the question left open.
//! - `modern.rs`: the 2026-07-28 rules, results and MRTR.
//! - `wires.rs`: the saga methods and the streamless sketch.
//! - `durable.rs`: durable mode (compare-and-set, rebuild, rotation).
//! - `session.rs`: the 2025-11-25 session wire.
//! - `pages.rs`: URL-mode elicitation completed by this worker's page.
//! - `tasks.rs`: the tasks extension.
//! - `skills.rs`: the skills bundled from `skills/` (SEP-2640).
//! - `cost.rs`: object requests, rows written and alarms per paused call.
//! - `deploy_check.rs`: calls paused under `wrangler dev` and exported
//!   (`DEPLOY_CHECK`), replayed on this code (run by the e2e tests).

mod answers;
mod cost;
mod deploy_check;
mod durable;
mod formats;
mod modern;
mod oauth;
mod pages;
mod session;
mod skills;
mod tasks;
mod wires;

use durable_mcp::server::Config;
use durable_mcp::testing::{TestReply, TestServer};
use durable_mcp::Bindings;

/// A reply as a client reads it.
pub(crate) type Reply = TestReply;

/// Test servers offering the fixtures worker's registry.
pub(crate) struct Harness;

impl Harness {
    /// The fixtures worker with the test configuration.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new() -> TestServer {
        TestServer::new(fixtures_worker::registry(&no_vars()).expect("builds"))
    }

    /// The same, with the configuration changed by `f`.
    pub(crate) fn with_config(f: impl FnOnce(&mut Config)) -> TestServer {
        TestServer::with_config(fixtures_worker::registry(&no_vars()).expect("builds"), f)
    }
}

pub(crate) fn set(headers: &mut Vec<(String, String)>, name: &str, value: Option<&str>) {
    headers.retain(|(k, _)| k != name);
    if let Some(v) = value {
        headers.push((name.to_string(), v.to_string()));
    }
}

pub(crate) fn assert_error(r: &Reply, status: u16, code: i64) {
    assert_eq!(r.status, status, "status; body {}", r.json);
    assert_eq!(r.json["error"]["code"], code, "code; body {}", r.json);
}

/// No webhook configured: `deploy` makes its ticket ids up.
fn no_vars() -> Bindings {
    Bindings::from_vars(Vec::<(String, String)>::new())
}
