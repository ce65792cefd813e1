//! The fixtures worker: the conformance suite's fixture tools, resources and
//! prompts, plus the example tools the e2e tests drive, served by
//! durable-mcp. `FIXTURES=1 npm start` serves it; `npm test` runs the e2e
//! tests and the conformance suite against it. Never deployed.
//!
//! # Layout
//! - `examples.rs`: `deploy` (seed 000's story, durable) and `add`.
//! - `fixtures.rs`: the conformance suite's fixtures.
//! - `tasks.rs`: the tasks-extension fixtures, and a long task for e2e.
//! - `chains.rs`: tool-chaining fixtures (loops, endless, refused chains).
//! - `signin.rs`: `whoami` and `release` (a durable call that steps up).
//! - `pages.rs`: `connect` and its `/connect` page (URL-mode elicitation).
//! - `approvals.rs`: `file_change` (an effect made of an answer, then a
//!   pause: what an operator's export must not show).
//! - `long.rs`: `long_talk` and `long_talk_task` (an agent loop: many
//!   sampling rounds) and
//!   `hoard` / `hoard_task` (large effect outputs between two questions).
//! - `trap.rs`: tools that trap, only with `TRAP_TOOLS` set (recovery tests).
//! - `../skills/`: the skills (SEP-2640) the suite reads, one folder each.

mod approvals;
mod chains;
mod examples;
mod fixtures;
mod long;
mod pages;
mod signin;
mod tasks;
mod trap;

use durable_mcp::{Bindings, Registry, SkillError};

/// Everything this worker serves, configured from `env`.
pub fn registry(env: &Bindings) -> Result<Registry, SkillError> {
    let mut r = Registry::new();
    r.state(examples::Settings {
        ticket_webhook: env.var("TICKET_WEBHOOK"),
    });
    examples::register(&mut r);
    fixtures::register(&mut r);
    tasks::register(&mut r);
    chains::register(&mut r);
    signin::register(&mut r);
    pages::register(&mut r);
    approvals::register(&mut r);
    long::register(&mut r);
    if env.var("TRAP_TOOLS").is_some() {
        trap::register(&mut r);
    }
    // skills/: the SEP-2640 fixtures (frontmatter, nested folders, a
    // prefix, a binary file), so none of the suite's checks is skipped.
    r.skills(durable_mcp::include_skills!("$CARGO_MANIFEST_DIR/skills")?);
    Ok(r)
}

durable_mcp::entry!(registry);
