//! A paused call pinned to the body that started it (issue 44), natively
//! on every wire.
//!
//! v1 is the deploy suite's `deploy` (a form `target`, a sampling
//! `verdict`, a ticket opened once), version "1", pinned. v2 changes it
//! completely — a sampling `risk` first, then a form `window`, a page sent
//! once instead of a ticket, another result — and keeps v1's body. v3 is
//! v2's body alone (still version "2": the body did not change) with v1's
//! dropped. A v1 call must finish on v1's body under v2 (v1's questions,
//! its ticket once, its result), park under v3 with `data.pinnedTo` "1"
//! and no effect, and finish after a rollback to v2; a call v2 started
//! runs v2's body under v2 and v3. Two registries served by turns (a
//! gradual deployment) never mix bodies or run an effect twice.

use super::*;

/// What v2's body answers for a call that rolled out to `target` with its
/// page the `page`th sent.
fn rolled(target: &str, page: u32) -> String {
    format!("v2 rolled api out to {target} (page P-{page}).")
}

/// v2's body: other questions in another order, another effect (`pages`
/// counts the pages sent), another result. `same_form`: it asks the form
/// under v1's key first (what a call moving at v1's upgrade point
/// brings along) instead of after the sampling.
fn v2_body(
    wire: Wire,
    pages: Rc<Cell<u32>>,
    same_form: bool,
) -> impl AsyncFn(&mut Cx, Value) -> Result<CallToolResult, ToolError> + 'static {
    async move |cx: &mut Cx, _args: Value| -> Result<CallToolResult, ToolError> {
        let window = async |cx: &mut Cx, key: &str| -> Result<String, ToolError> {
            let schema = form_schema(Extra::None);
            let a = cx
                .elicit_with(key, form("Which window do we roll out in?", schema))
                .await?;
            Ok(a.field::<String>("target").unwrap_or_default())
        };
        let mut target = String::new();
        if same_form {
            target = window(cx, "target").await?;
        }
        let risk = cx
            .sample("risk", ask("How risky is rolling out api now?", 20))
            .await?;
        if risk.text().is_empty() {
            return Ok(text("no risk assessment"));
        }
        if !same_form {
            target = window(cx, "window").await?;
        }
        let page = if wire.has_once() {
            let p = pages.clone();
            cx.once("page", async || {
                p.set(p.get() + 1);
                Ok(p.get())
            })
            .await?
        } else {
            0
        };
        Ok(text(rolled(&target, page)))
    }
}

/// v1 of the pinned tool on `wire` (with its upgrade point, if `moving`).
fn v1(wire: Wire, moving: bool) -> Shape {
    Shape {
        version: Some("1"),
        pinned: true,
        upgrade_point: moving,
        ..Shape::v1(wire)
    }
}

/// The tool at `version` with v2's body (the form first, if `moving`),
/// keeping v1's body when `keeps_v1`.
fn v2_tool(wire: Wire, w: &Counters, keeps_v1: bool, moving: bool) -> Tool {
    let shape = Shape {
        version: Some("2"),
        ..v1(wire, moving)
    };
    let mut tool = Tool::new(TOOL, v2_body(wire, w.pages.clone(), moving));
    if keeps_v1 {
        tool = tool.keeps("1", deploy_body(v1(wire, moving), w.tickets.clone()));
    }
    with_flags(tool, &shape)
}

fn registry_of(tool: Tool) -> Registry {
    let mut r = Registry::new();
    r.tool(tool).tool(Tool::new("noop", noop));
    r
}

/// The effects each body runs.
#[derive(Clone, Default)]
struct Counters {
    tickets: Rc<Cell<u32>>,
    pages: Rc<Cell<u32>>,
}

/// A v1 server with one call paused at `pause`; its counters.
fn paused_on_v1(wire: Wire, pause: Pause, moving: bool) -> (World, Counters) {
    let w = World::paused(wire, v1(wire, moving), pause);
    let c = Counters {
        tickets: w.counter.clone(),
        pages: Rc::default(),
    };
    (w, c)
}

/// The keys asked since `mark`.
fn asked_since(c: &Client, mark: usize) -> Vec<String> {
    c.asked[mark..].to_vec()
}

/// A pinned v1 call paused at `pause` finishes on v1's body under v2.
fn finishes_on_v1(wire: Wire, pause: Pause) {
    let (mut w, n) = paused_on_v1(wire, pause, false);
    let before = w.effects();
    w.s.server.registry = registry_of(v2_tool(wire, &n, true, false));
    let mark = w.c.asked.len();
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    assert_done(&end, &deployed(wire, "staging"), wire);
    let asked = asked_since(&w.c, mark);
    assert!(
        asked.iter().all(|k| k == "target" || k == "verdict"),
        "on {wire:?} v2 asked a v1 call {asked:?}"
    );
    if pause == Pause::Form {
        assert_eq!(asked, ["verdict"], "on {wire:?}: v1's remaining question");
    }
    assert_eq!(
        n.pages.get(),
        0,
        "on {wire:?}: v2's effect ran for a v1 call"
    );
    if wire.has_once() {
        assert_eq!(w.effects(), 1, "on {wire:?}: the ticket opened once");
        assert!(before <= 1);
    }
}

/// A new call under v2 runs v2's body.
fn new_calls_run_v2(wire: Wire) {
    let n = Counters::default();
    let mut s = TestServer::new(registry_of(v2_tool(wire, &n, true, false)));
    let mut c = Client::new(wire);
    let first = c.start(&mut s);
    let end = run_to_end(&mut c, &mut s, first);
    let page = u32::from(wire.has_once());
    assert_done(&end, &rolled("staging", page), wire);
    assert_eq!(c.asked, ["risk", "window"], "on {wire:?}");
    assert_eq!(
        n.tickets.get(),
        0,
        "on {wire:?}: v1's effect ran for a v2 call"
    );
}

/// v3 drops v1's body: a v1 call parks naming version 1 and runs nothing;
/// rolled back to v2, the same request finishes it on v1's body.
fn parks_without_v1_then_rolls_back(wire: Wire, pause: Pause) {
    let (mut w, n) = paused_on_v1(wire, pause, false);
    let before = w.effects();
    w.s.server.registry = registry_of(v2_tool(wire, &n, false, false));
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    assert_diverged(&end, wire, &[], &w.c);
    assert_pinned_to_1(&end, wire, &w.c);
    assert_eq!(w.effects(), before, "on {wire:?}: v1's effect ran under v3");
    assert_eq!(
        n.pages.get(),
        0,
        "on {wire:?}: v2's effect ran for a v1 call"
    );

    w.s.server.registry = registry_of(v2_tool(wire, &n, true, false));
    let again = w.c.resend(&mut w.s);
    let end = run_to_end(&mut w.c, &mut w.s, again);
    assert_done(&end, &deployed(wire, "staging"), wire);
    if wire.has_once() {
        assert_eq!(w.effects(), 1, "on {wire:?}: the ticket opened once");
    }
}

/// The park names the version the call is pinned to.
fn assert_pinned_to_1(end: &Step, wire: Wire, c: &Client) {
    if let Step::Failed { error, .. } = end {
        assert_eq!(error["data"]["pinnedTo"], "1", "on {wire:?}: {error}");
        return;
    }
    let seen = c.evidence().to_string();
    assert!(
        seen.contains("version \\\"1\\\"") || seen.contains("pinnedTo"),
        "on {wire:?}: the park does not name version 1: {seen}"
    );
}

/// A v1 call that passed its upgrade point moves to v2's body under v2:
/// v2 reads the form v1 recorded (not asked again), asks its own
/// sampling, sends its page; v1's ticket never opens.
fn moves_at_the_upgrade_point(wire: Wire) {
    let (mut w, n) = paused_on_v1(wire, Pause::Sampling, true);
    w.s.server.registry = registry_of(v2_tool(wire, &n, true, true));
    let mark = w.c.asked.len();
    let first = w.next();
    let end = run_to_end(&mut w.c, &mut w.s, first);
    let page = u32::from(wire.has_once());
    assert_done(&end, &rolled("staging", page), wire);
    assert_eq!(asked_since(&w.c, mark), ["risk"], "on {wire:?}");
    assert_eq!(
        w.effects(),
        0,
        "on {wire:?}: v1's ticket opened after the move"
    );
}

/// Two deploys live at once: every round goes to the other one. v1 calls
/// run v1's body on both; a v2 call parks on the old deploy (which lacks
/// v2) and the client's retry reaches the new one. Each effect once, each
/// call the result of the body that started it.
fn alternates(wire: Wire) {
    let n = Counters::default();
    let old = || {
        registry_of(with_flags(
            Tool::new(TOOL, deploy_body(v1(wire, false), n.tickets.clone())),
            &v1(wire, false),
        ))
    };
    let new = || registry_of(v2_tool(wire, &n, true, false));
    let mut s = TestServer::new(old());
    let mut on_v1 = Client::new(wire);
    let first_v1 = on_v1.start(&mut s);
    s.server.registry = new();
    let mut on_v2 = Client::new(wire);
    let first_v2 = on_v2.start(&mut s);
    let mut turn = 0;
    let mut by_turns = |s: &mut TestServer| {
        turn += 1;
        s.server.registry = if turn % 2 == 0 { new() } else { old() };
    };
    let end_v1 = drive(&mut on_v1, &mut s, first_v1, &mut by_turns);
    let end_v2 = drive(&mut on_v2, &mut s, first_v2, &mut by_turns);
    assert_done(&end_v1, &deployed(wire, "staging"), wire);
    assert_done(
        &end_v2,
        &rolled("staging", u32::from(wire.has_once())),
        wire,
    );
    assert!(on_v1.asked.iter().all(|k| k == "target" || k == "verdict"));
    assert!(on_v2.asked.iter().all(|k| k == "risk" || k == "window"));
    if wire.has_once() {
        assert_eq!((n.tickets.get(), n.pages.get()), (1, 1), "on {wire:?}");
    }
}

/// Answers a call to its end, switching deploys before every request; a
/// round refused for a version this deploy lacks is sent again.
fn drive(
    c: &mut Client,
    s: &mut TestServer,
    mut step: Step,
    switch: &mut impl FnMut(&mut TestServer),
) -> Step {
    for _ in 0..24 {
        switch(s);
        step = match step {
            Step::Asks(m) if !m.is_empty() => c.send(s, respond(&m, c.target)),
            Step::Failed { ref error, .. } if error["data"]["pinnedTo"] == "2" => c.resend(s),
            Step::Asks(_) | Step::Stuck(_) => c.resend(s),
            end => return end,
        };
    }
    step
}

macro_rules! pinning_tests {
    ($($wire:ident: $fin_form:ident, $fin_sampling:ident, $new:ident, $parks:ident, $moves:ident, $alt:ident;)*) => {
        $(
            #[test]
            fn $fin_form() { finishes_on_v1(Wire::$wire, Pause::Form); }
            #[test]
            fn $fin_sampling() { finishes_on_v1(Wire::$wire, Pause::Sampling); }
            #[test]
            fn $new() { new_calls_run_v2(Wire::$wire); }
            #[test]
            fn $parks() { parks_without_v1_then_rolls_back(Wire::$wire, Pause::Sampling); }
            #[test]
            fn $moves() { moves_at_the_upgrade_point(Wire::$wire); }
            #[test]
            fn $alt() { alternates(Wire::$wire); }
        )*
    };
}

pinning_tests! {
    Mrtr: pinned_at_form_mrtr, pinned_at_sampling_mrtr, v2_new_mrtr, v3_parks_mrtr, moves_mrtr, alternating_mrtr;
    Durable: pinned_at_form_durable, pinned_at_sampling_durable, v2_new_durable, v3_parks_durable, moves_durable, alternating_durable;
    Saga: pinned_at_form_saga, pinned_at_sampling_saga, v2_new_saga, v3_parks_saga, moves_saga, alternating_saga;
    Sketch: pinned_at_form_sketch, pinned_at_sampling_sketch, v2_new_sketch, v3_parks_sketch, moves_sketch, alternating_sketch;
    Session: pinned_at_form_session, pinned_at_sampling_session, v2_new_session, v3_parks_session, moves_session, alternating_session;
    Task: pinned_at_form_task, pinned_at_sampling_task, v2_new_task, v3_parks_task, moves_task, alternating_task;
}
