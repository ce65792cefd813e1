//! A model test of the kept call (issue 42): seeded random schedules of
//! what clients, operators and the platform do to calls on all three
//! keepers — a durable call (2026-07-28 rounds with `requestState`, kept
//! in a shard), a session's call (2025-11-25) and a task — driven through
//! `TestServer`, with the truth kept beside it.
//!
//! The steps: calls started on each keeper; answers; exact and stale
//! retries (a round sent again, a session's answer POSTed again or its
//! stream resumed, a `tasks/update` sent again); cancels (an operator's;
//! a session's `notifications/cancelled`, `tasks/cancel`); purges; a tool
//! paused and resumed; one call paused and resumed; code changes (a
//! version bump, a `Tool::patch` change that gives new calls another
//! question, both tools removed and restored); time passing with the
//! objects' alarms (spurious ones too); a round's isolate crashing in its
//! effect (its claim left behind, taken over by a retry once the claim
//! timed out); storage lost (a durable call's row, a session's object);
//! objects evicted.
//!
//! After every step: no effect ran twice, none ran before its answer and
//! each a finished call needed ran once; every answer is the one the truth
//! allows (no finished call comes back); the operator's listing equals the
//! truth. After every schedule every call not lost with its session can
//! still finish. Bounded: `KEPT_MODEL_SCHEDULES` schedules (default
//! 10,000) or `KEPT_MODEL_SECONDS` (default 120), whichever ends first,
//! but never fewer than 1,000 schedules (a machine busy with other work
//! takes longer over them rather than failing for it); a failure names its
//! seed (`KEPT_MODEL_SEED=<seed>` runs that one alone).
//! The run prints how often each thing happened (what it covered).
//!
//! Five bugs it found are fixed and its checks hold them (a task paused
//! by an operator listed stale; a session's claimed call listed waiting
//! and pausable; a durable call of a removed tool never parked, its end
//! not given; a rebuilt call's claim listed without its tool; a task's
//! "Stuck:" message outliving the code that fixed it).
//!
//! Layout: `tool.rs` (the tools, their effects, the crash, the codes a
//! deploy picks from), `world.rs` (the model, the truth, the invariants),
//! `durable.rs`, `session.rs`, `task.rs` (each keeper's client),
//! `operator.rs` (operators and the platform, the listing).

mod durable;
mod operator;
mod session;
mod task;
mod tool;
mod world;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tool::Code;
use world::{Kind, Model, Truth};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

impl Model {
    /// Starts a call on a keeper picked at random.
    fn start(&mut self, arg: u64) {
        match self.rng.below(3) {
            0 => self.start_durable(arg),
            1 => self.start_session(arg),
            _ => self.start_task(arg),
        }
    }

    /// What call `i`'s client sends next.
    fn answer(&mut self, i: usize) {
        match self.calls[i].kind {
            Kind::Durable => self.answer_durable(i, false),
            Kind::Session => self.answer_session(i, false),
            Kind::Task => self.answer_task(i),
        }
    }

    fn retry(&mut self, i: usize) {
        match self.calls[i].kind {
            Kind::Durable => self.retry_durable(i),
            Kind::Session => self.retry_session(i),
            Kind::Task => self.retry_task(i),
        }
    }

    /// An operator's cancel, or the client's own (session, task).
    fn cancel(&mut self, i: usize) {
        match self.calls[i].kind {
            Kind::Session if self.rng.one_in(2) => self.cancel_session(i),
            Kind::Task if self.rng.one_in(2) => self.cancel_task(i),
            _ => self.operator_cancel(i),
        }
    }

    /// Call `i`'s next round crashes in its effect: a durable or session
    /// call's answer, a task's slice.
    fn crash(&mut self, i: usize) {
        match self.calls[i].kind {
            Kind::Durable => self.answer_durable(i, true),
            Kind::Session => self.answer_session(i, true),
            Kind::Task if self.calls[i].truth == Truth::Ready => self.tick(false, Some(i)),
            Kind::Task => self.answer_task(i),
        }
    }

    /// Storage lost under call `i`: a durable call's row, or its session.
    /// (A task's object is never lost behind its keeper: it goes only by
    /// purge or its TTL, each of which tells the hub.)
    fn lose(&mut self, i: usize) {
        match self.calls[i].kind {
            Kind::Durable => self.lose_durable(i),
            Kind::Session if self.calls[i].truth != Truth::Gone => self.lose_session(i),
            _ => self.evict(),
        }
    }

    /// What the next step does: a client's, an operator's or the
    /// platform's move, drawn with these weights (no call yet: a start,
    /// or a step that needs none; no more ids to draw: no start).
    fn pick(&mut self) -> &'static str {
        let what = match self.rng.below(30) {
            0..=3 => "start",
            4..=10 => "answer",
            11..=13 => "retry",
            14..=15 => "cancel",
            16 => "purge",
            17 => "pause",
            18 => "resume",
            19 => "hold",
            20 => "release",
            21 => "lose",
            22 => "evict",
            23 => "deploy",
            24..=25 => "crash",
            _ => "tick",
        };
        let none = self.calls.is_empty();
        match what {
            _ if none && self.may_start() => "start",
            "start" if !self.may_start() => "tick",
            "pause" | "resume" | "tick" | "evict" | "deploy" => what,
            _ if none => "tick",
            _ => what,
        }
    }

    /// One step, then the invariants: effects, and the listing.
    fn step(&mut self, next_arg: &mut u64) {
        let i = self.rng.below(self.calls.len() as u64) as usize;
        match self.pick() {
            "start" => {
                *next_arg += 1;
                self.log.push(format!("start {}", *next_arg));
                self.start(*next_arg);
            }
            what @ ("pause" | "resume") => {
                let tool = self.some_tool();
                self.log.push(format!("{what} {tool}"));
                self.pause(tool, what == "pause");
            }
            "deploy" => {
                let code = Code::ALL[self.rng.below(4) as usize];
                self.log.push(format!("deploy {code:?}"));
                self.deploy(code);
            }
            "tick" => {
                let spurious = self.rng.one_in(3);
                self.log.push(format!("tick (spurious {spurious})"));
                self.tick(spurious, None);
            }
            what => {
                let call = self.calls.get(i).map(|c| (c.arg, c.kind));
                self.log.push(format!("{what} {call:?}"));
                self.act(what, i);
            }
        }
        self.check_effects();
        self.check_listing();
    }

    /// A step on call `i` (or on all: purge, evict).
    fn act(&mut self, what: &str, i: usize) {
        match what {
            "answer" => self.answer(i),
            "retry" => self.retry(i),
            "cancel" => self.cancel(i),
            "purge" => self.purge(),
            "hold" => self.hold(i, true),
            "release" => self.hold(i, false),
            "lose" => self.lose(i),
            "evict" => self.evict(),
            "crash" => self.crash(i),
            other => unreachable!("step {other}"),
        }
    }

    /// The end of a schedule: every call not gone with its session must
    /// finish once nothing stops it, its effects run once each.
    fn finish(&mut self) {
        self.unblock();
        self.check_effects();
        self.check_listing();
        for i in 0..self.calls.len() {
            for _ in 0..4 {
                if !self.calls[i].truth.live() {
                    break;
                }
                self.log.push(format!("answer {:?}", self.calls[i].arg));
                self.answer(i);
                if self.calls[i].kind == Kind::Task {
                    self.tick(false, None);
                }
            }
            if self.calls[i].truth.live() {
                self.fail(format!("call {} could not finish", self.calls[i].arg));
            }
        }
        self.check_effects();
        self.check_listing();
    }

    /// Code that serves deployed, tools and calls resumed, time past any
    /// claim (and every slice that can run, run).
    fn unblock(&mut self) {
        if !self.code.serves() {
            let code = [Code::V1, Code::V2, Code::V3][self.rng.below(3) as usize];
            self.log.push(format!("deploy {code:?}"));
            self.deploy(code);
        }
        for tool in [tool::DURABLE, tool::TASK] {
            if self.paused.contains(tool) {
                self.log.push(format!("resume {tool}"));
                self.pause(tool, false);
            }
        }
        for i in 0..self.calls.len() {
            if self.calls[i].held {
                self.log.push(format!("release {:?}", self.calls[i].arg));
                self.hold(i, false);
            }
        }
        self.log.push("tick x3".into());
        for _ in 0..3 {
            self.tick(false, None);
        }
    }
}

/// Runs the schedules of `seeds` until `deadline`; returns how many ran,
/// their steps, and what they covered.
/// Runs `seeds` in turn: the first `at_least` whatever the time, the rest
/// until `deadline`; all stop once any thread found a broken promise.
fn run(seeds: Vec<u64>, at_least: u64, deadline: Instant) -> (u64, u64, BTreeMap<String, u64>) {
    tool::quiet_crashes();
    let (mut ran, mut steps) = (0u64, 0u64);
    for seed in seeds {
        let late = ran >= at_least && Instant::now() > deadline;
        if late || world::FAILED.load(Ordering::Relaxed) {
            break;
        }
        let mut m = Model::new(seed);
        // Its calls' arguments are its own (effects are counted by them),
        // the same whether it runs alone or among others.
        let mut next_arg = seed * 1_000;
        let length = 8 + m.rng.below(20);
        for _ in 0..length {
            m.step(&mut next_arg);
            steps += 1;
        }
        m.finish();
        ran += 1;
    }
    (ran, steps, world::take_notes())
}

#[test]
fn random_schedules_keep_every_promise() {
    let schedules = env_u64("KEPT_MODEL_SCHEDULES").unwrap_or(10_000);
    let seconds = env_u64("KEPT_MODEL_SECONDS").unwrap_or(120);
    let seeds: Vec<u64> = match env_u64("KEPT_MODEL_SEED") {
        Some(seed) => vec![seed],
        None => (1..=schedules).collect(),
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    // The floor the assertion below holds the run to: every thread runs
    // its share of it before the deadline may stop it.
    let floor = (seeds.len() as u64).min(1_000);
    // Schedules are independent (each its own server, its own calls): two
    // threads, each its own seeds. A failure names its seed either way.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let (mut ran, mut steps, mut notes) = (0, 0, BTreeMap::new());
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<u64> = seeds.iter().copied().skip(t).step_by(threads).collect();
                let share = floor.div_ceil(threads as u64);
                scope.spawn(move || run(mine, share, deadline))
            })
            .collect();
        for r in runs {
            let (n, s, covered) = r.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            ran += n;
            steps += s;
            for (what, count) in covered {
                *notes.entry(what).or_insert(0u64) += count;
            }
        }
    });
    println!(
        "kept model: {ran} schedules, {steps} steps in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for (what, count) in &notes {
        println!("  {count:>7}  {what}");
    }
    assert!(ran >= floor, "only {ran} schedules of {floor}");
}
