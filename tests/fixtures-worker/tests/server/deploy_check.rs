//! The deploy check against calls paused under `wrangler dev`: with
//! `DEPLOY_CHECK` naming a file that `scripts/export-paused.mjs` wrote,
//! every call in it replays on this same code and continues.
//! `tests/e2e/deploy-check.test.mjs` pauses the calls, exports them and runs
//! this (and `tests/e2e/admin.test.mjs`, with the admin API's export and
//! `STATE_KEYS` to open its sealed answers); without the variable there is
//! nothing to check.

use durable_mcp::replay::{check, PausedCall, Verdict};

use crate::Harness;

#[test]
fn exported_paused_calls_continue_on_the_same_code() {
    let Some(file) = std::env::var_os("DEPLOY_CHECK") else {
        return;
    };
    let file = file.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let calls: Vec<PausedCall> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{file}: not a JSON array of paused calls: {e}"));
    assert!(!calls.is_empty(), "{file} holds no paused call");
    // An export from the admin API seals the answers under the Worker's
    // STATE_KEYS: the check opens them with the same keys.
    let s = match std::env::var("STATE_KEYS") {
        Ok(keys) => Harness::with_config(|c| {
            c.keys = durable_mcp::token::KeyRing::parse(&keys).expect("STATE_KEYS reads");
        }),
        Err(_) => Harness::new(),
    };
    let reports = check(&s.server, &calls);
    assert_eq!(reports.len(), calls.len());
    for r in &reports {
        // What the e2e test reads back (a line per call, with --nocapture).
        println!(
            "deploy-check {} {} {}",
            r.id,
            r.tool,
            serde_json::to_string(&r.verdict).unwrap_or_default()
        );
    }
    for r in &reports {
        assert!(
            matches!(r.verdict, Verdict::Continues { .. }),
            "{} ({}) does not continue on the code that paused it: {:?}",
            r.id,
            r.tool,
            r.verdict
        );
    }
}
