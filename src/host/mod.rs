//! Hosting the server on Durable Objects, sans-IO: a request's way in and
//! which object serves it ([`Inbound`]), what an object does with a
//! request ([`handle_in_object`]) and with its alarm ([`alarm`]), and how
//! changes reach the listen hubs that listen for them ([`announce`]).
//!
//! The Worker glue (`worker/`) and the test harness (`testing`)
//! both call these and apply the effects they return the same way; neither
//! decides anything.
//!
//! # Layout
//! - `inbound.rs`: a request's way in, step by step ([`Inbound`]): the one
//!   place its order is written; the Worker and the test server only do
//!   what each step asks.
//! - `cors.rs`: what a browser on another origin is told, decided first.
//! - `auth.rs`: who is calling, decided before routing: adapts the host's
//!   credentials (OAuth, the wrapper's props) to `crate::auth`.
//! - `route.rs`: where a request is served; the internal headers objects read.
//! - `place.rs`: where a durable call's shard lives: the caller's region,
//!   the shard, the location hint and jurisdiction its object is opened with.
//! - `object.rs`: a request inside an object (a call, a session, the hub); alarms.
//! - `announce.rs`: who hears of a change: every hub of a list's, the hubs
//!   a task was told listen of a task's; a task told so.
//! - `meter.rs`: limits where a request comes in: which requests ask their
//!   principal's meter, and a meter's object serving it.
//! - `page.rs`: pages beside `/mcp`, and a page's completion of a URL-mode
//!   elicitation in the object that keeps the call.

pub mod admin;
mod announce;
mod auth;
mod cors;
mod inbound;
mod kept;
mod meter;
mod object;
mod outside;
pub mod page;
mod place;
mod rehearse;
mod route;

pub use announce::{
    announce, index_shard, index_shards, watch_requests, watchers_for, INDEX_SHARDS,
};
pub use cors::apply as apply_cors;
pub use inbound::{Inbound, Step};
pub use meter::{admission_request, admitted, meter_notes};
pub use object::{alarm, handle_in_object};
pub use place::{placement, Placement};
pub use rehearse::rehearse;
pub use route::{client_headers, object_headers};
pub use route::{hub_name, HUB};

use crate::index::IndexStore;
use crate::server::task::TaskStore;
use crate::session::SessionStore;
use crate::store::CallStore;

/// An object's storage, as the kinds of stateful instance see it. All are
/// views of the same object storage; none writes until it must, so an
/// object that serves nothing stores nothing.
pub struct Stores<'a> {
    /// A durable call's storage.
    pub call: &'a dyn CallStore,
    /// A session's storage.
    pub session: &'a dyn SessionStore,
    /// A task's storage.
    pub task: &'a dyn TaskStore,
    /// The hub's admin index (see [`crate::index`]).
    pub index: &'a dyn IndexStore,
    /// A principal's meter (see [`crate::limits`]).
    pub meter: &'a dyn crate::limits::MeterStore,
}
