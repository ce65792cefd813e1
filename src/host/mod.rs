//! Hosting the server on Durable Objects, sans-IO: which object serves a
//! request ([`route_head`] by its head alone, else [`route`]), what an object does with a request
//! ([`handle_in_object`]) and with its alarm ([`alarm`]), and how list
//! changes reach the listen hub ([`hub_broadcast`]).
//!
//! The Worker glue (`worker/`) and the test harness (`testing`)
//! both call these and apply the effects they return the same way; neither
//! decides anything.
//!
//! # Layout
//! - `cors.rs`: what a browser on another origin is told, decided first.
//! - `auth.rs`: who is calling, decided before routing (OAuth).
//! - `route.rs`: where a request is served; the internal headers objects read.
//! - `object.rs`: a request inside an object (a call, a session, the hub); alarms.
//! - `page.rs`: pages beside `/mcp`, and a page's completion of a URL-mode
//!   elicitation in the object that keeps the call.

pub mod admin;
mod auth;
mod cors;
mod object;
pub mod page;
mod route;

pub use auth::{authenticate, authenticate_now, authenticate_props, Authenticated};
pub use cors::{apply as apply_cors, cors, Cors};
pub use object::{alarm, handle_in_object, hub_broadcast};
pub use route::{client_headers, object_headers};
pub use route::{hub_name, route, route_head, serve_local, Local, Route, HUB};

use crate::admin::index::IndexStore;
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
    /// The hub's admin index (see [`crate::admin::index`]).
    pub index: &'a dyn IndexStore,
}
