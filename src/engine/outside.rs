//! What reaches a kept call from outside its client's requests: a URL
//! elicitation's page completed, an operator's answer on the call's
//! behalf, an operator's "ask again from this question". Each changes the
//! journal here, once for every keeper; the keeper then stores it and
//! lets the call go on (`host/outside.rs`).

use std::rc::Rc;

use serde_json::{Map, Value};

use super::journal::{answer_fits, Answer, Journal};

/// Something for a kept call from outside its client.
#[derive(Debug, Clone, PartialEq)]
pub enum Outside {
    /// The page of the URL elicitation pending under `key` (with id
    /// `elicitation_id`) completed: its answer is `accept` with the page's
    /// form values and, if the page sealed any, `sealed` (opened only for
    /// the tool).
    Page {
        /// The question's key.
        key: String,
        /// The elicitation's id (the page's link named it).
        elicitation_id: String,
        /// The page's form values.
        content: Map<String, Value>,
        /// What the page sealed for the tool.
        sealed: Option<String>,
    },
    /// `by` (an operator) answers the question pending under `key` with
    /// `answer`, as the client would have (SEP-2848's out-of-band
    /// approval): the tool sees who answered (`Cx::answered_by`).
    Answer {
        /// The question's key.
        key: String,
        /// The answer, as the client would send it.
        answer: Value,
        /// Who answers (`operator`, `operator:<name>`).
        by: String,
    },
    /// Drop the answer to `key` and every answer that came with it or
    /// after it: the call asks them again (the user changed their mind).
    Rewind {
        /// The first question asked again.
        key: String,
    },
}

impl Outside {
    /// The question it is about.
    pub fn key(&self) -> &str {
        match self {
            Self::Page { key, .. } | Self::Answer { key, .. } | Self::Rewind { key } => key,
        }
    }
}

impl Journal {
    /// Takes `what` into the journal, or refuses with why (nothing
    /// changes): a page or an answer only for a question pending now, an
    /// answer only if it fits what was asked, a rewind only of an answer
    /// no recorded effect ran on.
    pub fn take_outside(&mut self, what: Outside, now_ms: u64) -> Result<(), &'static str> {
        let note = match &what {
            Outside::Page { .. } => None,
            Outside::Answer { key, by, .. } => Some(format!("answered {key:?} ({by})")),
            Outside::Rewind { key } => Some(format!("asked again from {key:?}")),
        };
        self.take(what)?;
        if let (Some(note), Some(t)) = (note, self.trail.as_mut()) {
            t.note(now_ms, note);
        }
        Ok(())
    }

    fn take(&mut self, what: Outside) -> Result<(), &'static str> {
        match what {
            Outside::Page {
                key,
                elicitation_id,
                content,
                sealed,
            } => {
                let Some(req) = self.pending_url(&key, &elicitation_id) else {
                    return Err("not waiting for this elicitation");
                };
                // An approver's page: the answer is theirs, and says so.
                let by = req.params["_meta"][super::journal::APPROVER_META]["principal"]
                    .as_str()
                    .map(|p| format!("approver:{p}"));
                let mut answer = serde_json::json!({"action": "accept", "content": content});
                if let Some(s) = sealed {
                    answer["sealed"] = Value::String(s);
                }
                self.opened.remove(&key);
                self.answer(&key, answer, by)
                    .map_err(|_| "the page's values are not form values")
            }
            Outside::Answer { key, answer, by } => {
                let url = self
                    .pending
                    .get(&key)
                    .is_some_and(|r| r.url_elicitation_id().is_some());
                // A URL elicitation's accept says the user finished its
                // page: only the page can say that.
                if url && answer["action"] == "accept" {
                    return Err("a URL elicitation is accepted on its page (decline or cancel it)");
                }
                self.answer(&key, answer, Some(by))
            }
            Outside::Rewind { key } => self.rewind(&key),
        }
    }

    /// Records `answer` to the question pending under `key`.
    fn answer(&mut self, key: &str, answer: Value, by: Option<String>) -> Result<(), &'static str> {
        let Some(req) = self.pending.get(key) else {
            return Err("not waiting for this question");
        };
        answer_fits(req, &answer).map_err(|_| "the answer does not fit the question")?;
        let mut a = Answer::new(req.digest(), Ok(answer), req.inputs.clone());
        a.by = by;
        self.pending.remove(key);
        self.answers.insert(key.to_string(), Rc::new(a));
        Ok(())
    }

    /// Drops the answer to `key` and those that came with it or later
    /// (by the trail's times; one not stamped yet came last), and what is
    /// pending: the next round's replay asks again from `key`. Refused
    /// when a recorded effect read one of them — it ran on that answer,
    /// and a different one would need it to run again.
    fn rewind(&mut self, key: &str) -> Result<(), &'static str> {
        if !self.answers.contains_key(key) {
            return Err("not answered");
        }
        let times = self.trail.as_ref().map(|t| &t.answered);
        let at = |k: &str| times.and_then(|t| t.get(k)).copied();
        let from = at(key);
        let dropped: Vec<String> = self
            .answers
            .keys()
            .filter(|k| *k == key || at(k).is_none() || from.is_some_and(|f| at(k) >= Some(f)))
            .cloned()
            .collect();
        let effect_read = self
            .once_inputs
            .values()
            .any(|read| dropped.iter().any(|k| read.contains_key(k)));
        if effect_read {
            return Err("an effect ran on that answer");
        }
        for k in &dropped {
            self.answers.remove(k);
            if let Some(t) = self.trail.as_mut() {
                t.answered.remove(k);
            }
        }
        self.pending.clear();
        self.opened.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::{InputRequest, RoundEnd};

    fn asked(j: &mut Journal, key: &str) {
        j.pending.insert(
            key.into(),
            InputRequest::new(
                "elicitation/create",
                json!({"message": key, "requestedSchema": {"type": "object"}}),
            ),
        );
    }

    fn yes() -> Value {
        json!({"action": "accept", "content": {}})
    }

    #[test]
    fn an_operator_answers_only_what_is_pending_and_is_named_in_the_answer() {
        let mut j = Journal::new();
        asked(&mut j, "ok");
        let give = |key: &str, answer: Value| Outside::Answer {
            key: key.into(),
            answer,
            by: "operator:ada".into(),
        };
        assert_eq!(
            j.take_outside(give("other", yes()), 0),
            Err("not waiting for this question")
        );
        assert_eq!(
            j.take_outside(give("ok", json!({"action": "maybe"})), 0),
            Err("the answer does not fit the question")
        );
        assert!(j.pending.contains_key("ok"), "a refusal changes nothing");
        j.take_outside(give("ok", yes()), 0).expect("pending");
        assert!(j.pending.is_empty());
        assert_eq!(
            j.answers.get("ok").and_then(|a| a.by.as_deref()),
            Some("operator:ada")
        );
        assert_eq!(
            j.take_outside(give("ok", yes()), 0),
            Err("not waiting for this question"),
            "answered once"
        );
    }

    #[test]
    fn a_rewind_drops_the_answer_and_later_ones_unless_an_effect_ran_on_them() {
        let mut j = Journal::new();
        for (i, key) in ["a", "b", "c"].iter().enumerate() {
            asked(&mut j, key);
            j.mark(1_000 * i as u64, RoundEnd::Paused, None, "");
            j.accept_answers([(key.to_string(), Ok(yes()))]);
        }
        // `c` is answered, not yet stamped by a mark: it came last.
        asked(&mut j, "d");
        assert_eq!(
            j.take_outside(Outside::Rewind { key: "d".into() }, 0),
            Err("not answered")
        );
        let mut k = j.clone();
        k.take_outside(Outside::Rewind { key: "b".into() }, 9_000)
            .expect("no effect ran");
        assert_eq!(k.answers.keys().collect::<Vec<_>>(), ["a"]);
        assert!(k.pending.is_empty(), "the replay asks again");
        let notes = &k.trail.as_ref().expect("marked").notes;
        assert_eq!(notes[0].what, "asked again from \"b\"");
        assert_eq!(notes[0].at_ms, 9_000);
        // An effect that ran after `b` read it: no rewind past it.
        j.once_inputs.insert(
            "deploy".into(),
            [("a".to_string(), "x".to_string()), ("b".into(), "y".into())].into(),
        );
        assert_eq!(
            j.take_outside(Outside::Rewind { key: "b".into() }, 9_000),
            Err("an effect ran on that answer")
        );
        assert_eq!(j.answers.len(), 3, "a refusal changes nothing");
    }
}
