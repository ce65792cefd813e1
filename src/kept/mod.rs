//! A call the server keeps — a durable call in its shard, a session's call,
//! a task — has one lifecycle, whichever keeper holds it: one [`Status`],
//! and one function, [`transition`], that says what each [`Event`] does to
//! it. A keeper loads its record, asks the machine, and stores what the
//! answer says; it decides nothing of its own. Sans-IO: no clock, no
//! storage.
//!
//! The promises the machine keeps, whatever the wire:
//! - a final status (completed, failed, cancelled) is never left: a round
//!   that ends after a cancel was accepted does not overwrite it (its
//!   client is told the call was cancelled), and nothing rebuilds a call
//!   the server finished or an operator removed;
//! - a cancel is an answer, never a wish: accepted (the call is cancelled,
//!   even with a round in flight), or refused with why;
//! - purge takes only finished calls; what it leaves is a tombstone for as
//!   long as a token may still name the call, so that token gets the
//!   call's end, never a replay.
//!
//! # The state table
//!
//! Rows are where a call is; columns what happens. `→ s`: it moves to
//! `s`; `tomb`: it becomes a tombstone (its end kept, its journal gone,
//! unlisted); `gone`: it is forgotten; `no: why`: refused, nothing
//! changes. `Ended` is a round's end: paused (`P`), completed (`C`),
//! failed (`F`), parked (`K`). `Wake` is anything that lets a waiting call
//! go on (an answer — its client's, or an operator's on its behalf —, a
//! page completed, a rewind to an earlier question, a timer due, its tool
//! resumed);
//! `Stop` its tool paused or its code diverged. `Hold`: an operator pauses
//! this call (every round of it parks until `Release`, its resume).
//! `Expire`: its idle TTL ran out (no token can name it any more).
//!
//! | from \ event | Claim | Ended P | Ended C | Ended F | Ended K | Wake | Stop | Hold | Release | Cancel | Purge | Expire |
//! |---|---|---|---|---|---|---|---|---|---|---|---|---|
//! | waiting | → working | → waiting | → completed | → failed | → parked | → waiting | → parked | → parked | → waiting | → cancelled | no: not finished | gone |
//! | working | no: running | → waiting | → completed | → failed | → parked | → working | → parked | no: running | no: running | → cancelled | no: not finished | gone |
//! | parked | → working | → waiting | → completed | → failed | → parked | → waiting | → parked | → parked | → waiting | → cancelled | no: not finished | gone |
//! | completed | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: already finished | tomb | gone |
//! | failed | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: finished | no: already finished | tomb | gone |
//! | cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: cancelled | no: already finished | tomb | gone |
//!
//! A round's end from `waiting` or `parked` is a round that ran through
//! without waiting on anything (a replay that answers at once writes no
//! claim): it ends as any round does.

use serde::{Deserialize, Serialize};

pub mod page;
pub mod summary;
pub mod versions;

pub use summary::{CallSummary, Kind};

pub use crate::engine::RoundEnd;

/// Where a kept call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Paused: waiting for the client (a person's answer, the client's
    /// model, its roots) or for a timer. (Rows stored before there was
    /// one status named it as their keeper's own words did.)
    #[serde(
        alias = "awaiting_input",
        alias = "input_required",
        alias = "awaiting_elicit",
        alias = "awaiting_sample",
        alias = "awaiting_roots"
    )]
    Waiting,
    /// A round is running (or a task works).
    #[serde(alias = "running", alias = "initializing")]
    Working,
    /// Kept as it was because the code changed so that it cannot be
    /// replayed, or because its tool is paused: it goes on after a fix, a
    /// rollback or a resume.
    Parked,
    /// Finished with a result.
    Completed,
    /// Finished with an error (a JSON-RPC error or a tool's error result).
    Failed,
    /// Cancelled by an operator or the client.
    Cancelled,
}

impl Status {
    /// Every status, in the order tables show them.
    pub const ALL: [Status; 6] = [
        Status::Waiting,
        Status::Working,
        Status::Parked,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Working => "working",
            Self::Parked => "parked",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Reads a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Nothing will happen to it any more.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// What can happen to a kept call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A round starts (a retry claims it, a task's alarm runs a slice).
    Claim,
    /// A round ended (its end as the trail records it; `Cancelled` is a
    /// [`Event::Cancel`]).
    Ended(RoundEnd),
    /// Something it waited for arrived: an answer, a page completed, a
    /// timer due, its tool resumed.
    Wake,
    /// Its tool was paused, or its code diverged from its journal.
    Stop,
    /// An operator pauses this call: it parks (a round running now must
    /// end first: the pause would be lost under its end).
    Hold,
    /// An operator resumes this call.
    Release,
    /// An operator or the client cancels it.
    Cancel,
    /// An operator purges it.
    Purge,
    /// Its idle TTL ran out: no token can name it any more.
    Expire,
}

impl Event {
    /// Every event, in the order the state table's columns show them.
    pub const ALL: [Event; 12] = [
        Event::Claim,
        Event::Ended(RoundEnd::Paused),
        Event::Ended(RoundEnd::Completed),
        Event::Ended(RoundEnd::Failed),
        Event::Ended(RoundEnd::Parked),
        Event::Wake,
        Event::Stop,
        Event::Hold,
        Event::Release,
        Event::Cancel,
        Event::Purge,
        Event::Expire,
    ];
}

/// What an event does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a keeper stores what the machine says, or refuses"]
pub enum Transition {
    /// It moves to this status.
    To(Status),
    /// It becomes a tombstone: its end kept (what a token still naming it
    /// is answered), its journal dropped, no longer listed.
    Tombstone,
    /// It is forgotten.
    Gone,
    /// Refused: nothing changes; [`Refused::why`] is what an operator or
    /// a client is told.
    No(Refused),
}

/// Why the machine refused an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A round is running: another one must wait.
    Running,
    /// The call is finished (completed or failed).
    Finished,
    /// The call was cancelled.
    Cancelled,
    /// A cancel of a finished call.
    AlreadyFinished,
    /// A purge of a call not finished.
    NotFinished,
}

impl Refused {
    /// What an operator or a client is told.
    pub fn why(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Cancelled => "cancelled",
            Self::AlreadyFinished => "already finished",
            Self::NotFinished => "not finished",
        }
    }
}

/// What `event` does to a call that is `from`: the one place the
/// lifecycle is decided (the module's state table, which a test walks).
pub fn transition(from: Status, event: Event) -> Transition {
    use Status::*;
    let event = match event {
        Event::Ended(RoundEnd::Cancelled) => Event::Cancel,
        e => e,
    };
    if event == Event::Expire {
        return Transition::Gone;
    }
    if from.is_final() {
        return match event {
            Event::Purge => Transition::Tombstone,
            Event::Cancel => Transition::No(Refused::AlreadyFinished),
            _ if from == Cancelled => Transition::No(Refused::Cancelled),
            _ => Transition::No(Refused::Finished),
        };
    }
    Transition::To(match event {
        Event::Claim | Event::Hold | Event::Release if from == Working => {
            return Transition::No(Refused::Running)
        }
        Event::Hold => Parked,
        Event::Release => Waiting,
        Event::Claim => Working,
        Event::Ended(RoundEnd::Paused) => Waiting,
        Event::Ended(RoundEnd::Completed) => Completed,
        Event::Ended(RoundEnd::Failed) => Failed,
        Event::Ended(RoundEnd::Parked) | Event::Stop => Parked,
        Event::Ended(RoundEnd::Cancelled) | Event::Cancel => Cancelled,
        Event::Wake if from == Working => Working,
        Event::Wake => Waiting,
        Event::Purge => return Transition::No(Refused::NotFinished),
        Event::Expire => return Transition::Gone,
    })
}

/// Whether a round that ended `ended` may store its end over a call that
/// is `now` (as its keeper reads it again, after the round's awaits): not
/// when a cancel (or anything else final) got there first.
pub fn may_store(now: Status, ended: RoundEnd) -> Result<Status, Refused> {
    match transition(now, Event::Ended(ended)) {
        Transition::To(s) => Ok(s),
        Transition::No(why) => Err(why),
        Transition::Tombstone | Transition::Gone => Err(Refused::Finished),
    }
}

/// A kept call whose state could not be stored (a row too large for the
/// platform, storage down) ends there, failed, once: what its trail
/// records (why) and what its client and every retry are told. Left to
/// retries, the round — and its effects — would run again and again.
pub(crate) fn unstored(e: &crate::error::McpError) -> (String, crate::error::McpError) {
    let why = format!(
        "its state could not be stored ({}): the call ends here, so that its effects never \
         run twice",
        e.message
    );
    let error = crate::error::McpError::internal(format!("The call failed: {why}"));
    (why, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell of the module's state table as the machine's answer.
    fn cell(t: Transition) -> String {
        match t {
            Transition::To(s) => format!("→ {}", s.as_str()),
            Transition::Tombstone => "tomb".into(),
            Transition::Gone => "gone".into(),
            Transition::No(why) => format!("no: {}", why.why()),
        }
    }

    #[test]
    fn rows_stored_in_a_keepers_own_words_read_as_one_status() {
        for (old, status) in [
            ("awaiting_input", Status::Waiting),
            ("input_required", Status::Waiting),
            ("awaiting_elicit", Status::Waiting),
            ("running", Status::Working),
            ("initializing", Status::Working),
            ("parked", Status::Parked),
            ("completed", Status::Completed),
        ] {
            let read: Status = serde_json::from_value(serde_json::json!(old)).expect("reads");
            assert_eq!(read, status, "{old}");
        }
        assert_eq!(
            serde_json::to_value(Status::Waiting).expect("writes"),
            "waiting"
        );
    }

    #[test]
    fn the_state_table_in_the_doc_is_what_the_machine_does() {
        let source = include_str!("mod.rs");
        let rows: Vec<Vec<String>> = source
            .lines()
            .filter_map(|l| l.strip_prefix("//! | "))
            .skip(1) // the header (its rule line starts "|---")
            .map(|l| {
                l.trim_end_matches(" |")
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect();
        assert_eq!(rows.len(), Status::ALL.len(), "a row per status");
        let mut walked = 0;
        for (status, row) in Status::ALL.into_iter().zip(&rows) {
            assert_eq!(row[0], status.as_str());
            assert_eq!(row.len(), Event::ALL.len() + 1, "{row:?}");
            for (event, doc) in Event::ALL.into_iter().zip(&row[1..]) {
                assert_eq!(
                    &cell(transition(status, event)),
                    doc,
                    "{status:?} × {event:?}"
                );
                walked += 1;
            }
        }
        assert_eq!(walked, 72, "every pair walked");
    }

    #[test]
    fn no_event_leaves_a_final_status_but_purge_and_expiry() {
        for from in Status::ALL.into_iter().filter(|s| s.is_final()) {
            for event in Event::ALL {
                match transition(from, event) {
                    Transition::To(_) => panic!("{from:?} left by {event:?}"),
                    Transition::Tombstone => assert_eq!(event, Event::Purge),
                    Transition::Gone => assert_eq!(event, Event::Expire),
                    Transition::No(_) => {}
                }
            }
        }
        assert_eq!(
            may_store(Status::Cancelled, RoundEnd::Completed),
            Err(Refused::Cancelled)
        );
        assert_eq!(
            may_store(Status::Working, RoundEnd::Completed),
            Ok(Status::Completed)
        );
    }
}
