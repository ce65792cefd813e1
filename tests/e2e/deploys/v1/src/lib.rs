//! v1 of the user's worker (tests/e2e/deploys.test.mjs): a `deploy` tool
//! per case, every one as the quickstart's (`Shape::v1`), or the variant
//! that opens its ticket before the sampling (`Shape::early`: a call paused
//! at the sampling holds a recorded `once`), or the one that waits after
//! the ticket (`Shape::sleeper`: a task mid-sleep).

mod deploy;

use deploy::{register, Settings, Shape};
use durable_mcp::{Bindings, Registry};

/// The tools of v1, by case: v2 changes each (but the controls) as its
/// name says.
pub fn tools() -> Vec<(&'static str, Shape)> {
    vec![
        ("control", Shape::v1()),
        ("control_early", Shape::early()),
        ("control_sleep", Shape::sleeper()),
        ("message_edited", Shape::v1()),
        ("optional_field", Shape::v1()),
        ("required_field", Shape::v1()),
        ("timer_changed", Shape::sleeper()),
        ("step_inserted", Shape::v1()),
        ("step_removed", Shape::v1()),
        ("ask_key_renamed", Shape::early()),
        ("once_key_renamed", Shape::early()),
        ("once_type_changed", Shape::early()),
        ("tool_removed", Shape::early()),
    ]
}

pub fn server(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(Settings {
        webhook: env.var("TICKET_WEBHOOK"),
    });
    for (name, shape) in tools() {
        register(&mut r, name, shape, "v1");
    }
    r
}

durable_mcp::entry!(server);
