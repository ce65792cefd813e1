//! Server-Sent Events encoding (WHATWG HTML §9.2).

use serde::{Deserialize, Serialize};

/// The comment line sent on streams held open so proxies do not cut them.
pub const KEEPALIVE: &str = ": keepalive\n\n";

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SseEvent {
    /// `id:` field, when the event can be resumed from.
    pub id: Option<String>,
    /// `event:` field; `None` means the default `message` event.
    pub event: Option<String>,
    /// The data; may contain newlines, each becomes its own `data:` line.
    pub data: String,
    /// `retry:` field in milliseconds (SEP-1699 polling).
    pub retry_ms: Option<u64>,
}

impl SseEvent {
    /// A `message` event carrying one JSON-RPC message.
    pub fn message(value: &serde_json::Value) -> Self {
        Self {
            data: value.to_string(),
            ..Self::default()
        }
    }

    /// Encodes the event as wire text, ending with the blank line.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Some(id) = &self.id {
            // An id may not contain a newline or NUL; strip them rather than
            // emit a frame the client would misparse.
            let clean: String = id
                .chars()
                .filter(|c| !matches!(c, '\n' | '\r' | '\0'))
                .collect();
            out.push_str("id: ");
            out.push_str(&clean);
            out.push('\n');
        }
        if let Some(event) = &self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push('\n');
        }
        if let Some(ms) = self.retry_ms {
            out.push_str(&format!("retry: {ms}\n"));
        }
        // `lines()` drops a trailing empty line; keep the data exact by
        // splitting on every line terminator the parser recognises.
        for line in self.data.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// Encodes a whole list of events.
pub fn encode_all(events: &[SseEvent]) -> String {
    events.iter().map(SseEvent::encode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_event_is_one_data_line_and_a_blank_line() {
        let e = SseEvent::message(&serde_json::json!({"a": 1}));
        assert_eq!(e.encode(), "data: {\"a\":1}\n\n");
    }

    #[test]
    fn every_field_is_written_and_multiline_data_is_split() {
        let e = SseEvent {
            id: Some("s1-7".into()),
            event: Some("message".into()),
            data: "one\ntwo".into(),
            retry_ms: Some(500),
        };
        assert_eq!(
            e.encode(),
            "id: s1-7\nevent: message\nretry: 500\ndata: one\ndata: two\n\n"
        );
    }

    #[test]
    fn a_priming_event_has_an_id_and_empty_data() {
        let e = SseEvent {
            id: Some("0".into()),
            ..Default::default()
        };
        assert_eq!(e.encode(), "id: 0\ndata: \n\n");
    }

    #[test]
    fn newlines_in_an_id_cannot_break_the_frame() {
        let e = SseEvent {
            id: Some("a\nb".into()),
            data: "x".into(),
            ..Default::default()
        };
        assert_eq!(e.encode(), "id: ab\ndata: x\n\n");
        assert_eq!(encode_all(&[e.clone(), e]).matches("\n\n").count(), 2);
    }
}
