//! HTTP: a POST whose reply is JSON or an SSE stream of JSON-RPC messages.

use std::io::BufReader;

use base64::Engine;
use serde_json::Value;

use crate::oauth::{Challenge, MAX_AUTHORIZATIONS};
use crate::sse::Events;
use crate::{Client, Error, Result};

/// What a POST answered.
pub(crate) struct Reply {
    /// The `Mcp-Session-Id` header, if any.
    pub(crate) session: Option<String>,
    /// Every JSON-RPC message, in order (one for a JSON reply).
    pub(crate) messages: Vec<Value>,
}

/// A header value as MCP sends it: plain when it is visible ASCII without
/// outer spaces, else `=?base64?…?=`.
pub(crate) fn header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain {
        value.to_string()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{b64}?=")
    }
}

/// The JSON-RPC error of a message as an [`Error`], if it is one.
pub(crate) fn rpc_error(message: &Value) -> Option<Error> {
    let e = message.get("error")?;
    Some(Error::Rpc {
        code: e["code"].as_i64().unwrap_or(0),
        message: e["message"].as_str().unwrap_or_default().to_string(),
        data: e.get("data").cloned(),
    })
}

impl Client {
    /// POSTs `body` with `headers` (plus the JSON content type and the
    /// Accept every MCP POST carries). An HTTP error status comes back as
    /// its response: its body holds the server's JSON-RPC error.
    ///
    /// With sign-in configured ([`Client::with_oauth`]) the request carries
    /// the access token, and a 401 or 403 `insufficient_scope` challenge is
    /// met here, below every wire: one refresh, then at most
    /// [`MAX_AUTHORIZATIONS`] authorizations, each followed by the same
    /// request again. A refused sign-in is [`Error::Auth`].
    pub(crate) fn send(&self, headers: &[(&str, String)], body: &Value) -> Result<ureq::Response> {
        let Some(sign_in) = &self.sign_in else {
            return self.send_text(headers, &body.to_string(), None);
        };
        let text = body.to_string();
        let mut authorizations = 0;
        let mut refreshed = false;
        loop {
            let bearer = sign_in.borrow_mut().bearer(&self.url);
            let resp = self.send_text(headers, &text, bearer.as_deref())?;
            let status = resp.status();
            let challenge = match status {
                401 | 403 => resp.header("www-authenticate").and_then(Challenge::parse),
                _ => None,
            };
            let Some(challenge) = challenge else {
                return Ok(resp);
            };
            if status == 403 && !challenge.insufficient_scope() {
                return Ok(resp);
            }
            // An expired token: a refresh is cheaper than asking the user.
            if status == 401 && bearer.is_some() && !refreshed {
                refreshed = true;
                if sign_in.borrow_mut().refresh(&self.url).is_ok() {
                    continue;
                }
            }
            if authorizations == MAX_AUTHORIZATIONS {
                return Err(Error::Auth(format!(
                    "still refused ({status}) after {MAX_AUTHORIZATIONS} authorizations"
                )));
            }
            authorizations += 1;
            sign_in
                .borrow_mut()
                .authorize(&self.url, Some(&challenge))?;
        }
    }

    /// The `Authorization` header value of the token in use, if signed in.
    pub(crate) fn bearer(&self) -> Option<String> {
        let token = self.sign_in.as_ref()?.borrow_mut().bearer(&self.url)?;
        Some(format!("Bearer {token}"))
    }

    fn send_text(
        &self,
        headers: &[(&str, String)],
        body: &str,
        token: Option<&str>,
    ) -> Result<ureq::Response> {
        let mut req = self
            .agent
            .post(&self.url)
            .set("content-type", "application/json")
            .set("accept", "application/json, text/event-stream");
        for (k, v) in headers {
            req = req.set(k, v);
        }
        if let Some(t) = token {
            req = req.set("authorization", &format!("Bearer {t}"));
        }
        match req.send_string(body) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => Ok(r),
            Err(e) => Err(Error::Transport(e.to_string())),
        }
    }

    /// POSTs `body` with `headers`; reads the whole reply.
    pub(crate) fn post(&self, headers: &[(&str, String)], body: &Value) -> Result<Reply> {
        let resp = self.send(headers, body)?;
        if resp.status() >= 400 {
            // A JSON-RPC error body is the server's answer; anything else
            // is a transport failure.
            let code = resp.status();
            let text = resp.into_string().unwrap_or_default();
            return match serde_json::from_str::<Value>(&text) {
                Ok(v) if v.get("error").is_some() => Ok(Reply {
                    session: None,
                    messages: vec![v],
                }),
                _ => Err(Error::Transport(format!("HTTP {code}: {text}"))),
            };
        }
        read_reply(resp)
    }
}

/// Reads a response: JSON, an SSE stream, or nothing (202).
pub(crate) fn read_reply(resp: ureq::Response) -> Result<Reply> {
    let session = resp.header("mcp-session-id").map(str::to_string);
    let sse = resp.content_type() == "text/event-stream";
    if resp.status() == 202 {
        return Ok(Reply {
            session,
            messages: Vec::new(),
        });
    }
    if !sse {
        let text = resp
            .into_string()
            .map_err(|e| Error::Transport(e.to_string()))?;
        let messages = if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text)
                .map_err(|e| Error::Protocol(format!("not JSON ({e}): {text}")))?]
        };
        return Ok(Reply { session, messages });
    }
    let mut messages = Vec::new();
    for event in Events::new(BufReader::new(resp.into_reader())) {
        let event = event.map_err(|e| Error::Transport(e.to_string()))?;
        if !event.data.is_empty() {
            messages.push(
                serde_json::from_str(&event.data)
                    .map_err(|e| Error::Protocol(format!("an SSE event is not JSON: {e}")))?,
            );
        }
    }
    Ok(Reply { session, messages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_value("deploy"), "deploy");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
    }
}
