//! The fixtures worker: the conformance suite's fixture tools, resources and
//! prompts, plus the example tools the e2e tests drive, served by
//! durable-mcp. `FIXTURES=1 npm start` serves it; `npm test` runs the e2e
//! tests and the conformance suite against it. Never deployed.
//!
//! # Layout
//! - `examples.rs`: `deploy` (seed 000's story, durable) and `add`.
//! - `fixtures.rs`: the conformance suite's fixtures.

mod examples;
mod fixtures;

use durable_mcp::{Bindings, Registry};

/// Everything this worker serves, configured from `env`.
pub fn registry(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(examples::Settings {
        ticket_webhook: env.var("TICKET_WEBHOOK"),
    });
    examples::register(&mut r);
    fixtures::register(&mut r);
    r
}

durable_mcp::entry!(registry);
