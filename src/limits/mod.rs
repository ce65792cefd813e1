//! Limits per principal and per tool, so that one tenant or one runaway
//! agent cannot starve the rest: what may be set ([`Policy`], [`Limits`]),
//! and a principal's meter, which counts exactly and decides
//! ([`meter`]).
//!
//! Where they are enforced (`host`): a new call, or a paused call's next
//! round on the wires the Worker sees it on, asks its principal's meter
//! before anything runs or is stored; a refusal is `-32013` with HTTP 429
//! and `Retry-After`. The rounds' ends reach the meter as notes the
//! server queues ([`crate::server::Server::take_notes`]). With no limit
//! configured none of this happens.

pub mod meter;
mod policy;

use std::cell::RefCell;

pub use meter::{Admit, Ask, Kind, MeterStore, Note, Refusal, Row, Verdict};
pub use policy::{Applied, Limits, Policy, Rate, Scoped};

use crate::error::McpError;

/// On a request a meter admitted (internal, set by the Worker): the meter's
/// object and the round's lease, released when the round ends.
pub const LEASE_HEADER: &str = "x-durable-mcp-lease";
/// On a new task a limit refused (internal): the [`Refusal`], as JSON.
/// The task is kept `working` and runs when its meter admits it.
pub const LIMITED_HEADER: &str = "x-durable-mcp-limited";

/// A kept call asking its meter to run (a task a limit held back): the
/// host sends `admit` to `meter` and hands the answer back to the object
/// (`host::admitted`).
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The meter's object.
    pub meter: String,
    /// What it is asked.
    pub admit: Admit,
}

/// A meter's storage in memory (the test server's, and unit tests').
#[derive(Debug, Default)]
pub struct MemoryMeter {
    rows: RefCell<std::collections::BTreeMap<(String, String), Row>>,
}

impl MeterStore for MemoryMeter {
    fn count(&self, kind: &str, tool: Option<&str>, now_ms: u64) -> Result<u64, McpError> {
        let rows = self.rows.borrow();
        Ok(rows
            .values()
            .filter(|r| r.kind == kind && r.until > now_ms && tool.is_none_or(|t| r.tool == t))
            .count() as u64)
    }
    fn get(&self, kind: &str, key: &str) -> Result<Option<Row>, McpError> {
        let k = (kind.to_string(), key.to_string());
        Ok(self.rows.borrow().get(&k).cloned())
    }
    fn put(&self, row: &Row) -> Result<(), McpError> {
        let k = (row.kind.clone(), row.key.clone());
        self.rows.borrow_mut().insert(k, row.clone());
        Ok(())
    }
    fn delete(&self, kind: &str, key: &str) -> Result<(), McpError> {
        let k = (kind.to_string(), key.to_string());
        self.rows.borrow_mut().remove(&k);
        Ok(())
    }
    fn expire(&self, now_ms: u64) -> Result<(), McpError> {
        self.rows.borrow_mut().retain(|_, r| r.until > now_ms);
        Ok(())
    }
    fn live(&self, now_ms: u64) -> Result<Vec<Row>, McpError> {
        let rows = self.rows.borrow();
        Ok(rows
            .values()
            .filter(|r| r.until > now_ms)
            .cloned()
            .collect())
    }
}

/// The object keeping `principal`'s meter: named by a digest, so that no
/// principal's name is an object's name.
pub fn meter_name(principal: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(principal.as_bytes());
    format!("meter:{}", crate::engine::hex(&d[..16]))
}
