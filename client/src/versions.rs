//! The protocol versions this client speaks, and the wire each travels on.

use crate::{Wire, MODERN, SESSION};

/// The protocol versions the stateless wire speaks, newest first.
pub const STATELESS_VERSIONS: &[&str] = &[MODERN];
/// The protocol versions a session speaks, newest first.
pub const SESSION_VERSIONS: &[&str] = &[SESSION, "2025-06-18", "2025-03-26"];

impl Wire {
    /// The wire a protocol version travels on: the stateless one for
    /// 2026-07-28, a session for the dated versions before it.
    pub fn for_version(version: &str) -> Wire {
        if STATELESS_VERSIONS.contains(&version) {
            Wire::Modern
        } else {
            Wire::Session
        }
    }
}
