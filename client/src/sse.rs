//! Server-Sent Events, read line by line from a response body.

use std::io::BufRead;

/// One event: its id (if any), its data (the lines joined), and the
/// reconnection delay it sets (if any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// `id:`.
    pub id: Option<String>,
    /// `data:` lines, joined with newlines.
    pub data: String,
    /// `retry:`, in milliseconds: how long to wait before reconnecting
    /// once the stream ends (SEP-1699). A value that is not all digits is
    /// ignored, as the SSE specification says.
    pub retry: Option<u64>,
}

/// Reads events from a stream, one at a time, as they arrive.
pub struct Events<R> {
    reader: R,
}

impl<R: BufRead> Events<R> {
    /// Events of `reader`.
    pub fn new(reader: R) -> Self {
        Self { reader }
    }
}

impl<R: BufRead> Iterator for Events<R> {
    type Item = std::io::Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut event = Event::default();
        let mut seen = false;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Err(e) => return Some(Err(e)),
                // The end: a last event without its blank line still counts.
                Ok(0) => return seen.then_some(Ok(event)),
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if seen {
                    return Some(Ok(event));
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // a comment (keepalive)
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "data" => {
                    if seen && !event.data.is_empty() {
                        event.data.push('\n');
                    }
                    event.data.push_str(value);
                    seen = true;
                }
                "id" => {
                    event.id = Some(value.to_string());
                    seen = true;
                }
                "retry" => {
                    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                        event.retry = value.parse().ok();
                    }
                    seen = true;
                }
                _ => seen = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_with_ids_comments_and_multiline_data() {
        let text = ": keepalive\nid: c1:0\ndata:\n\nid: c1:1\ndata: {\"a\":\ndata: 1}\n\nretry: 1000\n\ndata: last";
        let events: Vec<Event> = Events::new(text.as_bytes())
            .collect::<std::io::Result<_>>()
            .unwrap_or_default();
        assert_eq!(events.len(), 4);
        assert_eq!(events[0].id.as_deref(), Some("c1:0"));
        assert_eq!(events[0].data, "");
        assert_eq!(events[1].data, "{\"a\":\n1}");
        assert_eq!(events[2].retry, Some(1000));
        assert_eq!(events[3].data, "last");
        assert_eq!(events[3].retry, None);
    }

    #[test]
    fn retry_with_an_id_and_empty_data_is_one_priming_event() {
        let text = "id: e1\nretry: 500\ndata: \n\nretry: soon\ndata: x\n\n";
        let events: Vec<Event> = Events::new(text.as_bytes())
            .collect::<std::io::Result<_>>()
            .unwrap_or_default();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id.as_deref(), Some("e1"));
        assert_eq!(events[0].retry, Some(500));
        assert_eq!(events[0].data, "");
        // Not digits: ignored.
        assert_eq!(events[1].retry, None);
    }
}
