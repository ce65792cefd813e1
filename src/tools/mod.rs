//! The tools this worker serves: our examples, and the conformance fixtures
//! when the configuration asks for them.
//!
//! # Layout
//! - `examples.rs`: tools that show the authoring surface (`deploy` follows seed 000's story).
//! - `fixtures.rs`: the conformance suite's fixture tools, resources and prompts.
//! - `webhook.rs`: a real side effect (POST JSON) for the examples.

mod examples;
mod fixtures;
mod webhook;

use crate::server::Registry;

/// The registry: examples always, fixtures when `fixtures` is set.
pub fn registry(fixtures: bool) -> Registry {
    let mut r = Registry::new();
    examples::register(&mut r);
    if fixtures {
        fixtures::register(&mut r);
    }
    r
}
