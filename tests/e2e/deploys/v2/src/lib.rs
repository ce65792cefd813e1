//! v2 of the user's worker (tests/e2e/deploys.test.mjs): the same tools as
//! v1, each changed as its case says, served on v1's storage and keys while
//! v1's calls are paused.

mod deploy;

use std::time::Duration;

use deploy::{register, Settings, Shape};
use durable_mcp::{Bindings, Registry};

pub fn tools() -> Vec<(&'static str, Shape)> {
    vec![
        // Unchanged: the controls.
        ("control", Shape::v1()),
        ("control_early", Shape::early()),
        ("control_sleep", Shape::sleeper()),
        // The form's message reworded.
        (
            "message_edited",
            Shape {
                reworded: true,
                ..Shape::v1()
            },
        ),
        // An optional field added to the form.
        (
            "optional_field",
            Shape {
                optional_field: true,
                ..Shape::v1()
            },
        ),
        // A required field added: a recorded answer no longer fits.
        (
            "required_field",
            Shape {
                required_field: true,
                ..Shape::v1()
            },
        ),
        // The wait made 40 times longer.
        (
            "timer_changed",
            Shape {
                sleep: Some(Duration::from_secs(600)),
                ..Shape::sleeper()
            },
        ),
        // A confirmation inserted before the sampling.
        (
            "step_inserted",
            Shape {
                confirm: true,
                ..Shape::v1()
            },
        ),
        // The sampling removed.
        (
            "step_removed",
            Shape {
                sample: false,
                ..Shape::v1()
            },
        ),
        // The form's key renamed ("target" → "destination"), the sampling
        // removed: the ticket was opened for the old answer.
        (
            "ask_key_renamed",
            Shape {
                ask_key: "destination",
                sample: false,
                ..Shape::early()
            },
        ),
        // The effect's key renamed ("ticket" → "ticket2").
        (
            "once_key_renamed",
            Shape {
                once_key: "ticket2",
                ..Shape::early()
            },
        ),
        // The effect's output now a number (it was the ticket, a string).
        (
            "once_type_changed",
            Shape {
                once_number: true,
                ..Shape::early()
            },
        ),
        // tool_removed: not served by v2.
    ]
}

pub fn server(env: &Bindings) -> Registry {
    let mut r = Registry::new();
    r.state(Settings {
        webhook: env.var("TICKET_WEBHOOK"),
    });
    for (name, shape) in tools() {
        register(&mut r, name, shape, "v2");
    }
    r
}

durable_mcp::entry!(server);
