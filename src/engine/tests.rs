//! The engine on the host: replay, parallel asks, nondeterminism, `once`.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{json, Value};

use super::*;

fn elicit_answer(v: &str) -> Result<Value, Value> {
    Ok(json!({"action": "accept", "content": {"v": v}}))
}

/// Drives `handler` to completion, answering every request with `answer`.
/// Returns the final value and how many rounds it took.
fn drive<T: std::fmt::Debug + 'static>(
    handler: &dyn Handler<Value, T>,
    answer: impl Fn(&InputRequest) -> Result<Value, Value>,
) -> (T, u32) {
    let mut journal = Journal::new();
    for round in 0..10 {
        let run = block_on(run(
            handler,
            Cx::new(journal.clone(), ClientCaps::all()),
            Value::Null,
        ));
        match run.outcome {
            Outcome::Complete(v) => return (v, round),
            Outcome::InputRequired {
                requests,
                journal: j,
            } => {
                journal = j;
                journal.accept_answers(requests.iter().map(|(k, r)| (k.clone(), answer(r))));
                journal.round += 1;
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    panic!("did not finish in 10 rounds");
}

#[test]
fn a_tool_is_replayed_until_every_answer_is_in() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        let a = cx.elicit_with("a", form("A?", json!({}))).await?;
        let b = cx.elicit_with("b", form("B?", json!({}))).await?;
        Ok(format!(
            "{}{}",
            a.field::<String>("v").unwrap_or_default(),
            b.field::<String>("v").unwrap_or_default()
        ))
    });
    let (v, rounds) = drive(&*h, |r| {
        elicit_answer(r.params["message"].as_str().unwrap_or(""))
    });
    assert_eq!(v, "A?B?");
    assert_eq!(rounds, 2);
}

#[test]
fn asks_made_before_awaiting_go_out_in_one_round() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        let a = cx.elicit_with("a", form("A?", json!({})));
        let s = cx.sample("s", ask("hi", 10));
        let r = cx.roots("r");
        let (a, s, r) = (a.await?, s.await?, r.await?);
        Ok(format!("{} {} {}", a.action, s.text(), r.len()))
    });
    let first = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::all()),
        Value::Null,
    ));
    let Outcome::InputRequired { requests, .. } = first.outcome else {
        panic!("expected input")
    };
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["a", "r", "s"]);
    let (v, rounds) = drive(&*h, |r| match r.method.as_str() {
        "sampling/createMessage" => Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}),
        ),
        "roots/list" => Ok(json!({"roots": [{"uri": "file:///x"}]})),
        _ => elicit_answer("x"),
    });
    assert_eq!((v.as_str(), rounds), ("accept ok 1", 1));
}

#[test]
fn once_effects_do_not_run_again_on_replay() {
    let runs = Rc::new(Cell::new(0));
    let counter = runs.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<u32, ToolError> {
            let c = counter.clone();
            let ticket: u32 = cx
                .once("ticket", async || {
                    c.set(c.get() + 1);
                    Ok(c.get() * 100)
                })
                .await?;
            cx.elicit_with("confirm", form("ok?", json!({}))).await?;
            cx.elicit_with("again", form("sure?", json!({}))).await?;
            Ok(ticket)
        },
    );
    let (v, rounds) = drive(&*h, |_| elicit_answer("y"));
    assert_eq!((v, rounds, runs.get()), (100, 2, 1));
}

/// Runs `h` once from `journal`, answering every request it asks with
/// `answer`: the journal to go on from, or the outcome it ended with.
#[allow(clippy::result_large_err)]
fn round<T: std::fmt::Debug + 'static>(
    h: &dyn crate::engine::Handler<Value, T>,
    journal: Journal,
    answer: impl Fn(&str) -> Result<Value, Value>,
) -> Result<Journal, Outcome<T>> {
    let r = block_on(run(h, Cx::new(journal, ClientCaps::all()), Value::Null));
    match r.outcome {
        Outcome::InputRequired {
            requests,
            mut journal,
        } => {
            journal.accept_answers(requests.keys().map(|k| (k.clone(), answer(k))));
            Ok(journal)
        }
        other => Err(other),
    }
}

#[test]
fn a_reworded_question_keeps_its_recorded_answer() {
    let flip = Rc::new(Cell::new(false));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            // A deploy rewords the message and adds an optional field.
            let schema = if f.get() {
                json!({"type": "object", "properties": {"v": {"type": "string"}, "note": {"type": "string"}}})
            } else {
                json!({"type": "object", "properties": {"v": {"type": "string"}}})
            };
            let msg = if f.get() { "changed" } else { "first" };
            let r = cx.elicit_with("k", form(msg, schema)).await?;
            Ok(r.field::<String>("v").unwrap_or_default())
        },
    );
    let journal = round(&*h, Journal::new(), |_| elicit_answer("x")).expect("paused");
    flip.set(true);
    let second = block_on(run(&*h, Cx::new(journal, ClientCaps::all()), Value::Null));
    assert_eq!(second.outcome, Outcome::Complete("x".to_string()));
}

#[test]
fn a_question_the_recorded_answer_no_longer_fits_is_asked_again() {
    let flip = Rc::new(Cell::new(false));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            // The new code requires a field the old answer lacks.
            let schema = if f.get() {
                json!({"type": "object", "properties": {"v": {"type": "string"}, "w": {"type": "string"}}, "required": ["w"]})
            } else {
                json!({"type": "object", "properties": {"v": {"type": "string"}}})
            };
            let r = cx.elicit_with("k", form("q", schema)).await?;
            Ok(r.field::<String>("w").unwrap_or_default())
        },
    );
    let journal = round(&*h, Journal::new(), |_| elicit_answer("x")).expect("paused");
    flip.set(true);
    let again = block_on(run(&*h, Cx::new(journal, ClientCaps::all()), Value::Null));
    let Outcome::InputRequired { requests, .. } = again.outcome else {
        panic!("expected the question again, got {:?}", again.outcome)
    };
    assert!(requests.contains_key("k"));
}

#[test]
fn a_renamed_effect_is_not_run_a_second_time() {
    let runs = Rc::new(Cell::new(0));
    let (r2, flip) = (runs.clone(), Rc::new(Cell::new(false)));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<u32, ToolError> {
            let key = if f.get() { "ticket2" } else { "ticket" };
            let r3 = r2.clone();
            let t = cx
                .once(key, || async move {
                    r3.set(r3.get() + 1);
                    Ok::<u32, ToolError>(7)
                })
                .await?;
            cx.elicit_with("later", form("ok?", json!({}))).await?;
            Ok(t)
        },
    );
    let journal = round(&*h, Journal::new(), |_| elicit_answer("y")).expect("paused");
    assert_eq!(runs.get(), 1);
    flip.set(true);
    let Err(Outcome::Error(e)) = round(&*h, journal.clone(), |_| elicit_answer("y")) else {
        panic!("expected a code-change error")
    };
    assert_eq!((e.code(), e.http_status()), (-32050, 409));
    assert_eq!(e.data.as_ref().expect("data")["key"], "ticket2");
    assert_eq!(runs.get(), 1, "the effect ran once");
    // Rolled back: the same journal goes on.
    flip.set(false);
    let done = block_on(run(&*h, Cx::new(journal, ClientCaps::all()), Value::Null));
    assert_eq!(done.outcome, Outcome::Complete(7));
    assert_eq!(runs.get(), 1);
}

#[test]
fn an_effect_whose_recorded_output_no_longer_decodes_parks_the_call() {
    let flip = Rc::new(Cell::new(false));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            let t = if f.get() {
                cx.once("ticket", || async { Ok::<u64, ToolError>(1) })
                    .await?
                    .to_string()
            } else {
                cx.once("ticket", || async { Ok::<String, ToolError>("T-1".into()) })
                    .await?
            };
            cx.elicit_with("later", form("ok?", json!({}))).await?;
            Ok(t)
        },
    );
    let journal = round(&*h, Journal::new(), |_| elicit_answer("y")).expect("paused");
    flip.set(true);
    let Err(Outcome::Error(e)) = round(&*h, journal, |_| elicit_answer("y")) else {
        panic!("expected a code-change error")
    };
    assert_eq!(e.code(), -32050);
    assert!(e.message.contains("another type"), "{}", e.message);
}

#[test]
fn an_effect_replays_only_while_its_answers_are_still_the_ones_read() {
    // v1: ask "target", then the effect; v2 asks "destination" instead.
    let flip = Rc::new(Cell::new(false));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            let key = if f.get() { "destination" } else { "target" };
            let target = cx
                .elicit_with(key, form("where?", json!({})))
                .await?
                .field::<String>("v")
                .unwrap_or_default();
            let ticket = cx
                .once("ticket", || async move {
                    Ok::<String, ToolError>(format!("ticket for {target}"))
                })
                .await?;
            cx.elicit_with("later", form("ok?", json!({}))).await?;
            Ok(ticket)
        },
    );
    let j1 = round(&*h, Journal::new(), |_| elicit_answer("staging")).expect("asked target");
    let j2 = round(&*h, j1, |_| elicit_answer("y")).expect("ran the effect");
    assert!(j2.once.contains_key("ticket"));
    flip.set(true);
    // The renamed question is asked; once answered, the recorded ticket
    // (for staging) would meet a new answer: the call is parked instead.
    let j3 = round(&*h, j2.clone(), |_| elicit_answer("production")).expect("asked again");
    let Err(Outcome::Error(e)) = round(&*h, j3, |_| elicit_answer("y")) else {
        panic!("expected a code-change error")
    };
    assert_eq!(e.code(), -32050);
    assert_eq!(e.data.as_ref().expect("data")["key"], "ticket");
    // An inserted question before the effect changes nothing it read.
    flip.set(false);
    let h2 = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
            cx.elicit_with("new", form("new?", json!({}))).await?;
            let target = cx
                .elicit_with("target", form("where?", json!({})))
                .await?
                .field::<String>("v")
                .unwrap_or_default();
            let ticket = cx
                .once("ticket", || async move {
                    Ok::<String, ToolError>(format!("ticket for {target}"))
                })
                .await?;
            cx.elicit_with("later", form("ok?", json!({}))).await?;
            Ok(ticket)
        },
    );
    let j = round(&*h2, j2, |_| elicit_answer("y")).expect("asked the new question");
    let done = block_on(run(&*h2, Cx::new(j, ClientCaps::all()), Value::Null));
    assert_eq!(
        done.outcome,
        Outcome::Complete("ticket for staging".to_string())
    );
}

#[test]
fn asking_without_the_capability_is_a_missing_capability_error() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<(), ToolError> {
        cx.sample("s", ask("hi", 5)).await?;
        Ok(())
    });
    let caps = ClientCaps {
        elicitation: true,
        ..ClientCaps::default()
    };
    let r = block_on(run(&*h, Cx::new(Journal::new(), caps), Value::Null));
    let Outcome::Error(e) = r.outcome else {
        panic!("expected error")
    };
    assert_eq!(e.code(), -32021);
    assert_eq!(
        e.data,
        Some(json!({"requiredCapabilities": {"sampling": {}}}))
    );
    // A generic client shows the message alone: it names what is missing.
    assert!(e.message.contains("support sampling"), "{}", e.message);
}

#[test]
fn a_missing_form_elicitation_is_named_in_the_message() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<(), ToolError> {
        cx.elicit_with(
            "e",
            json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}),
        )
        .await?;
        Ok(())
    });
    let r = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::default()),
        Value::Null,
    ));
    let Outcome::Error(e) = r.outcome else {
        panic!("expected error")
    };
    assert_eq!(e.code(), -32021);
    assert!(
        e.message
            .contains("needs the client to support elicitation (form)"),
        "{}",
        e.message
    );
}

#[test]
fn a_client_error_reaches_the_tool_as_a_value_it_can_handle() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        match cx.elicit_with("a", form("A?", json!({}))).await {
            Err(ToolError::Client(e)) => {
                Ok(format!("handled {}", e["message"].as_str().unwrap_or("")))
            }
            other => other.map(|r| r.action),
        }
    });
    let (v, _) = drive(&*h, |_| {
        Err(json!({"code": -1, "message": "user went away"}))
    });
    assert_eq!(v, "handled user went away");
}

#[test]
fn bad_arguments_fail_the_tool_not_the_protocol() {
    #[derive(serde::Deserialize)]
    struct Args {
        #[allow(dead_code)]
        n: u32,
    }
    let h = boxed(async |_: &mut Cx, a: Args| -> Result<u32, ToolError> { Ok(a.n) });
    let r = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::all()),
        json!({"n": "x"}),
    ));
    assert!(matches!(r.outcome, Outcome::ToolFailed(m) if m.starts_with("Invalid arguments")));
}

#[test]
fn a_swallowed_suspension_still_pauses_the_call() {
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        // A body that catches the pause and carries on must not end the
        // call without the answer it asked for.
        let answer = cx.elicit_with("a", form("A?", json!({}))).await.ok();
        Ok(answer.map_or("no answer".into(), |a| a.action))
    });
    let first = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::all()),
        Value::Null,
    ));
    assert!(
        matches!(&first.outcome, Outcome::InputRequired { requests, .. } if requests.contains_key("a")),
        "{:?}",
        first.outcome
    );
    let (v, rounds) = drive(&*h, |_| elicit_answer("x"));
    assert_eq!((v.as_str(), rounds), ("accept", 1));
}

/// A flat form as a type.
#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Target {
    /// Where to deploy.
    target: String,
    replicas: Option<u8>,
}

fn typed_elicit_outcome(answer: Value) -> Elicitation<Target> {
    let h = boxed(
        async |cx: &mut Cx, _: Value| -> Result<Elicitation<Target>, ToolError> {
            cx.elicit::<Target>("t", "Where?").await
        },
    );
    let first = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::all()),
        Value::Null,
    ));
    let Outcome::InputRequired {
        requests,
        mut journal,
    } = first.outcome
    else {
        panic!("expected the form to be sent")
    };
    let t = requests.get("t").expect("the request under t");
    let schema = &t.params["requestedSchema"];
    assert_eq!(t.params["message"], "Where?");
    assert_eq!(
        schema["properties"]["target"]["description"],
        "Where to deploy."
    );
    assert_eq!(schema["required"], json!(["target"]));
    journal.accept_answers([("t".to_string(), Ok(answer))]);
    let second = block_on(run(&*h, Cx::new(journal, ClientCaps::all()), Value::Null));
    match second.outcome {
        Outcome::Complete(v) => v,
        other => panic!("expected completion, got {other:?}"),
    }
}

#[test]
fn a_typed_elicitation_returns_the_form_declined_or_cancelled() {
    assert_eq!(
        typed_elicit_outcome(
            json!({"action": "accept", "content": {"target": "prod", "replicas": 3}})
        ),
        Elicitation::Accepted(Target {
            target: "prod".into(),
            replicas: Some(3)
        })
    );
    assert_eq!(
        typed_elicit_outcome(json!({"action": "decline"})),
        Elicitation::Declined
    );
    assert_eq!(
        typed_elicit_outcome(json!({"action": "cancel"})),
        Elicitation::Cancelled
    );
}

#[test]
fn a_non_flat_form_type_is_refused_with_a_clear_error_before_asking() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Target,
    }
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<(), ToolError> {
        cx.elicit::<Nested>("n", "Fill this in").await?;
        Ok(())
    });
    let r = block_on(run(
        &*h,
        Cx::new(Journal::new(), ClientCaps::all()),
        Value::Null,
    ));
    match r.outcome {
        Outcome::Error(e) => {
            assert_eq!(e.code(), -32603);
            assert!(
                e.message.contains("field `inner` is a nested object"),
                "{}",
                e.message
            );
        }
        other => panic!("expected an internal error, got {other:?}"),
    }
}

#[test]
fn a_submitted_form_that_does_not_fit_the_type_is_refused_and_stays_open() {
    let h = boxed(
        async |cx: &mut Cx, _: Value| -> Result<Elicitation<Target>, ToolError> {
            cx.elicit::<Target>("t", "Where?").await
        },
    );
    let mut journal = Journal::new();
    let first = block_on(run(
        &*h,
        Cx::new(journal.clone(), ClientCaps::all()),
        Value::Null,
    ));
    if let Outcome::InputRequired { journal: j, .. } = first.outcome {
        journal = j;
    }
    let wrong = [(
        "t".to_string(),
        Ok(json!({"action": "accept", "content": {"target": 5}})),
    )];
    // Where the journal has the form (a kept journal): refused up front.
    let e = journal.check_answers(&wrong).expect_err("refused");
    assert_eq!(e.code(), -32602);
    assert!(e.message.contains("\"t\""), "{}", e.message);
    assert_eq!(journal.clone().accept_answers(wrong.clone()), 0);
    // Where it has only the form's digest (a token's compacted journal) the
    // answer is taken, and the replay, which asks in full, refuses it: a
    // protocol error, so the round is not run and the question stays open.
    let mut compact = journal.compacted();
    assert_eq!(compact.accept_answers(wrong), 1);
    let r = block_on(run(&*h, Cx::new(compact, ClientCaps::all()), Value::Null));
    assert!(
        matches!(&r.outcome, Outcome::Error(e) if e.code() == -32602 && e.message.contains("content.target")),
        "{:?}",
        r.outcome
    );
}

#[test]
fn patched_is_true_for_calls_that_began_on_code_with_the_change() {
    // The new code: branches on the change, asks in two rounds.
    let h = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        let first = cx.patched("new-path");
        cx.elicit_with("a", form("a?", json!({}))).await?;
        let later = cx.patched("new-path");
        Ok(format!("{first} {later}"))
    });
    // A call that starts on it: true in every round.
    let j = round(&*h, Journal::new(), |_| elicit_answer("x")).expect("paused");
    assert!(j.patches.contains("new-path"));
    let done = block_on(run(&*h, Cx::new(j, ClientCaps::all()), Value::Null));
    assert_eq!(done.outcome, Outcome::Complete("true true".to_string()));
    // A call paused on the old code (no change recorded) meets it: false.
    let old = boxed(async |cx: &mut Cx, _: Value| -> Result<String, ToolError> {
        cx.elicit_with("a", form("a?", json!({}))).await?;
        Ok(String::new())
    });
    let j = round(&*old, Journal::new(), |_| elicit_answer("x")).expect("paused");
    assert!(j.patches.is_empty());
    let done = block_on(run(&*h, Cx::new(j, ClientCaps::all()), Value::Null));
    assert_eq!(done.outcome, Outcome::Complete("false false".to_string()));
}

#[test]
fn each_call_records_the_code_that_ran_it_and_a_divergence_names_both() {
    let flip = Rc::new(Cell::new(false));
    let f = flip.clone();
    let h = boxed(
        async move |cx: &mut Cx, _: Value| -> Result<u32, ToolError> {
            let key = if f.get() { "b" } else { "a" };
            let t = cx.once(key, || async { Ok::<u32, ToolError>(1) }).await?;
            cx.elicit_with("later", form("ok?", json!({}))).await?;
            Ok(t)
        },
    );
    let cx = Cx::new(Journal::new(), ClientCaps::all()).with_code("tool=1".into(), &["p".into()]);
    let first = block_on(run(&*h, cx, Value::Null));
    let Outcome::InputRequired {
        mut journal,
        requests,
    } = first.outcome
    else {
        panic!("paused")
    };
    journal.accept_answers(requests.keys().map(|k| (k.clone(), elicit_answer("y"))));
    assert_eq!(journal.code, vec!["tool=1".to_string()]);
    assert!(
        journal.patches.contains("p"),
        "declared changes recorded at the start"
    );
    flip.set(true);
    let cx = Cx::new(journal, ClientCaps::all()).with_code("tool=2".into(), &[]);
    let Outcome::Error(e) = block_on(run(&*h, cx, Value::Null)).outcome else {
        panic!("expected a code-change error")
    };
    let data = e.data.expect("data");
    assert_eq!(data["pausedOn"], "tool=1");
    assert_eq!(data["metOn"], "tool=2");
}
