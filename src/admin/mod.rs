//! What an operator sees of the calls the server keeps, sans-IO: the
//! shapes the admin API answers ([`model`]), each kept call summarized
//! from where it is stored ([`summary`]), the index of tasks and sessions
//! ([`index`]), and the console's pages (`console.rs`). Where requests go
//! and who may send them is the host's (`host/admin.rs`).
//!
//! # Layout
//! - `model.rs`: listings, details, filters, counts (the JSON of the API).
//! - `summary.rs`: a durable call, a session's call, a task as listed and shown.
//! - `index.rs`: the index the hub keeps of tasks and live sessions, and
//!   the tools an operator paused.
//! - `console.rs`: the `/admin` pages, server-rendered.

pub mod index;
pub mod model;
pub mod summary;

pub use model::{
    AnswerView, CallDetail, CallSummary, Counts, Done, EffectView, Filter, Kind, Listing, Status,
};
pub(crate) mod console;
