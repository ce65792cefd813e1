//! Requests beyond tool calls, on the wire in use: any method
//! ([`Client::request`]), `server/discover`, resources and prompts. On the
//! 2026-07-28 wire each carries its `_meta` and mirrored headers and is
//! driven through its MRTR rounds; in a session it is one request, the
//! server's own requests on its stream answered as they come. The seed
//! wires only carry calls: the rest goes on the 2026-07-28 wire there.

use serde_json::{json, Value};

use crate::rounds::Round;
use crate::{Client, Error, Result, Wire};

impl Client {
    /// Sends `method` with `params` and returns its result, answering what
    /// the server asks with the handler; a call that becomes a task is
    /// polled to its end. Mirrored headers (`Mcp-Name` from a tool or
    /// prompt name or a resource URI) are set from `params`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        match self.wire()? {
            Wire::Session => self.session_request(method, params),
            _ => match self.modern_rounds(method, params)? {
                Round::Complete(result) => Ok(result),
                Round::Task(created) => self.run_task(&created),
                Round::InputRequired(_) => {
                    Err(Error::Protocol(format!("{method} still asks for input")))
                }
            },
        }
    }

    /// `server/discover` (2026-07-28): the versions, capabilities and
    /// identity the server declares. Clients may skip it; it also settles
    /// the protocol version when the server refuses the first one.
    pub fn discover(&mut self) -> Result<Value> {
        self.modern_request("server/discover", json!({}), None)
    }

    /// The server's resources (`resources/list`, every page).
    pub fn list_resources(&mut self) -> Result<Vec<Value>> {
        self.list_all("resources/list", "resources")
    }

    /// Reads the resource at `uri` (`resources/read`).
    pub fn read_resource(&mut self, uri: &str) -> Result<Value> {
        self.request("resources/read", json!({ "uri": uri }))
    }

    /// The server's prompts (`prompts/list`, every page).
    pub fn list_prompts(&mut self) -> Result<Vec<Value>> {
        self.list_all("prompts/list", "prompts")
    }

    /// The prompt `name` filled with `arguments` (`prompts/get`).
    pub fn get_prompt(&mut self, name: &str, arguments: Value) -> Result<Value> {
        self.request("prompts/get", json!({"name": name, "arguments": arguments}))
    }

    /// Every page of a list method: the `key` array of each, following
    /// `nextCursor`.
    fn list_all(&mut self, method: &str, key: &str) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let mut params = json!({});
            if let Some(c) = cursor.take() {
                params["cursor"] = c;
            }
            let page = self.request(method, params)?;
            items.extend(page[key].as_array().cloned().unwrap_or_default());
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => return Ok(items),
            }
        }
    }
}
