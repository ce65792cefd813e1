//! What an operator sees of the calls the server keeps, sans-IO: the
//! shapes the admin API answers ([`model`]), each kept call summarized
//! from where it is stored ([`summary`]), and the console's pages
//! (`console.rs`). The index of tasks and sessions it starts from is the
//! hub's (`crate::index`). Where requests go
//! and who may send them is the host's (`host/admin.rs`).
//!
//! # Layout
//! - `model.rs`: listings, details, filters, counts (the JSON of the API).
//! - `summary.rs`: a durable call, a session's call, a task as listed and shown.
//! - `console.rs`: the `/admin` pages, server-rendered.

pub mod model;
pub mod summary;

pub use model::{
    AnswerView, CallDetail, CallSummary, Counts, Done, EffectView, Filter, Kind, Listing, Status,
    Versions,
};
pub(crate) mod console;
