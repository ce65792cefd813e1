//! The tools the model calls, the effects they count, the crash an effect
//! can be made to die in, and the codes a deploy switches between.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use durable_mcp::{form, text, CallToolResult, Cx, Registry, Tool, ToolError};
use serde_json::{json, Value};

/// The durable tool: called on the durable wire and in sessions.
pub(crate) const DURABLE: &str = "two_steps";
/// The same body as a task.
pub(crate) const TASK: &str = "two_steps_task";
/// The change V3 declares: calls that start on it ask `c` too.
const PATCH: &str = "confirm";
/// The questions each effect follows: `e1` after `a`, `e2` after `b`.
pub(crate) const EFFECT_KEYS: [&str; 2] = ["a", "b"];

thread_local! {
    /// Effect runs by (call, effect).
    static RUNS: RefCell<BTreeMap<(u64, u8), u32>> = const { RefCell::new(BTreeMap::new()) };
    /// The call whose next effect dies in flight (its isolate crashes).
    static CRASH: Cell<Option<u64>> = const { Cell::new(None) };
}

/// How many times effect `effect` of call `call` ran.
pub(crate) fn ran(call: u64, effect: u8) -> u32 {
    RUNS.with(|r| r.borrow().get(&(call, effect)).copied().unwrap_or(0))
}

/// Makes the next effect of `call` crash its isolate (`None`: none does).
pub(crate) fn crash_next(call: Option<u64>) {
    CRASH.with(|c| c.set(call));
}

/// The panic an effect crashes with: the isolate dies, nothing after it
/// runs; the platform (here, [`crashing`]) carries on.
struct Crashed;

/// Runs `f`; `Err(())` when an effect crashed in it. Any other panic goes
/// on (a real failure).
pub(crate) fn crashing<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Ok(v),
        Err(p) if p.is::<Crashed>() => Err(()),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// A crash is expected: it prints nothing (the default hook for the rest).
pub(crate) fn quiet_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Crashed>() {
                default(info);
            }
        }));
    });
}

/// Pending once: the effect's I/O. A round that meets it has to wait, so a
/// kept call's claim is written (as in the Worker, before the first await).
struct Io(bool);

impl Future for Io {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Effect `n` of `call`, once: its I/O, then (unless its isolate crashes
/// during that I/O, before it took effect) one run counted.
async fn effect(cx: &Cx, call: u64, n: u8) -> Result<u8, ToolError> {
    cx.once(&format!("e{n}"), async || {
        Io(false).await;
        if CRASH.with(|c| c.get() == Some(call)) {
            CRASH.with(|c| c.set(None));
            std::panic::panic_any(Crashed);
        }
        RUNS.with(|r| *r.borrow_mut().entry((call, n)).or_default() += 1);
        Ok(n)
    })
    .await
}

fn question(message: &str) -> Value {
    form(
        message,
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
    )
}

/// Asks `a`, runs `e1`, asks `b`, runs `e2`; with `confirm` (V3) a call
/// that started on V3 asks `c` last.
async fn body(cx: &mut Cx, args: Value, confirm: bool) -> Result<CallToolResult, ToolError> {
    let call = args["call"].as_u64().unwrap_or(0);
    cx.elicit_with("a", question("First?")).await?;
    effect(cx, call, 1).await?;
    cx.elicit_with("b", question("Second?")).await?;
    effect(cx, call, 2).await?;
    if confirm && cx.patched(PATCH) {
        cx.elicit_with("c", question("Sure?")).await?;
    }
    Ok(text(format!("done {call}")))
}

async fn plain(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    body(cx, args, false).await
}

async fn confirming(cx: &mut Cx, args: Value) -> Result<CallToolResult, ToolError> {
    body(cx, args, true).await
}

async fn noop(_: &mut Cx, _: Value) -> Result<CallToolResult, ToolError> {
    Ok(text("ok"))
}

/// The code deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// The first body.
    V1,
    /// The same body, `Tool::version("2")`.
    V2,
    /// `Tool::patch("confirm")`: a call that starts on it asks `c` after
    /// `e2` (`cx.patched`), one paused before does not.
    V3,
    /// Neither tool served (a calls' round parks until one comes back).
    Gone,
}

impl Code {
    /// Every code, for a deploy to pick from.
    pub(crate) const ALL: [Code; 4] = [Code::V1, Code::V2, Code::V3, Code::Gone];

    /// The registry this code serves (a `noop` tool always, so it is
    /// never empty).
    pub(crate) fn registry(self) -> Registry {
        let mut r = Registry::new();
        r.tool(Tool::new("noop", noop));
        let tools = match self {
            Code::V1 => [Tool::new(DURABLE, plain), Tool::new(TASK, plain)],
            Code::V2 => [
                Tool::new(DURABLE, plain).version("2"),
                Tool::new(TASK, plain).version("2"),
            ],
            Code::V3 => [
                Tool::new(DURABLE, confirming).version("3").patch(PATCH),
                Tool::new(TASK, confirming).version("3").patch(PATCH),
            ],
            Code::Gone => return r,
        };
        let [durable, task] = tools;
        r.tool(durable.durable()).tool(task.task());
        r
    }

    pub(crate) fn serves(self) -> bool {
        self != Code::Gone
    }

    /// The questions a call asks under this code, in order (`patched`: it
    /// started on V3).
    pub(crate) fn questions(self, patched: bool) -> &'static [&'static str] {
        if self == Code::V3 && patched {
            &["a", "b", "c"]
        } else {
            &["a", "b"]
        }
    }
}

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True one time in `n`.
    pub(crate) fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}
