//! Several streams read at once, for a blocking client: a session's `GET`
//! stream (where a server sends requests that belong to no call of the
//! client's) beside the reply stream of the call in flight. Each response
//! is read on its own thread into one channel, so the client answers
//! whichever stream speaks first, on its own thread, with its handler.
//! See [`Client::with_listen_stream`](crate::Client::with_listen_stream).

use std::io::BufReader;
use std::sync::mpsc::{channel, Receiver, Sender};

use serde_json::Value;

use crate::session::{Position, MAX_RESUMES};
use crate::sse::{Event, Events};
use crate::{Client, Error, Result};

/// What a reader thread passes on.
pub(crate) enum Incoming {
    /// An SSE event of stream `stream`.
    Event(u64, Event),
    /// A JSON reply (not a stream).
    Message(Value),
    /// `stream` ended; with why, if it broke.
    End(u64, Option<String>),
}

/// The channel the reader threads write to, and the streams in it.
pub(crate) struct Inbox {
    tx: Sender<Incoming>,
    rx: Receiver<Incoming>,
    next: u64,
    /// The session's `GET` stream, while it is open.
    pub(crate) listening: Option<u64>,
    /// The server answered the `GET` with no stream: do not ask again in
    /// this session.
    pub(crate) refused: bool,
}

impl Inbox {
    pub(crate) fn new() -> Self {
        let (tx, rx) = channel();
        Self {
            tx,
            rx,
            next: 0,
            listening: None,
            refused: false,
        }
    }

    /// Reads `resp` (an SSE stream or a JSON body) on a thread of its own;
    /// returns the id its messages come under.
    pub(crate) fn read(&mut self, resp: ureq::Response) -> u64 {
        self.next += 1;
        let stream = self.next;
        let tx = self.tx.clone();
        let sse = resp.content_type() == "text/event-stream";
        // A reader ends when its stream does (or the agent's read timeout
        // ends it); a send fails only once the client is gone.
        std::thread::spawn(move || {
            let end = if sse {
                read_events(stream, resp, &tx)
            } else {
                read_json(resp, &tx)
            };
            let _ = tx.send(Incoming::End(stream, end.err()));
        });
        stream
    }

    /// The next message of any stream, waiting for it.
    pub(crate) fn next(&self) -> Option<Incoming> {
        self.rx.recv().ok()
    }
}

fn read_events(
    stream: u64,
    resp: ureq::Response,
    tx: &Sender<Incoming>,
) -> std::result::Result<(), String> {
    for event in Events::new(BufReader::new(resp.into_reader())) {
        let event = event.map_err(|e| e.to_string())?;
        if tx.send(Incoming::Event(stream, event)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

fn read_json(resp: ureq::Response, tx: &Sender<Incoming>) -> std::result::Result<(), String> {
    let text = resp.into_string().map_err(|e| e.to_string())?;
    if text.trim().is_empty() {
        return Ok(()); // 202 Accepted: nothing to pass on
    }
    let message = serde_json::from_str(&text).map_err(|e| format!("not JSON ({e}): {text}"))?;
    let _ = tx.send(Incoming::Message(message));
    Ok(())
}

impl Client {
    /// Opens the session's `GET` stream when listening is on and it is not
    /// open; a server that offers none is not asked again this session.
    pub(crate) fn ensure_listening(&mut self) {
        if !self.settings.listen {
            return;
        }
        let inbox = self.settings.inbox.get_or_insert_with(Inbox::new);
        if inbox.listening.is_some() || inbox.refused {
            return;
        }
        let mut get = self.agent.get(&self.url).set("accept", "text/event-stream");
        for (k, v) in self.session_headers() {
            get = get.set(k, &v);
        }
        if let Some(b) = self.bearer() {
            get = get.set("authorization", &b);
        }
        let opened = get
            .call()
            .ok()
            .filter(|r| r.content_type() == "text/event-stream");
        let inbox = self.settings.inbox.get_or_insert_with(Inbox::new);
        match opened {
            Some(resp) => inbox.listening = Some(inbox.read(resp)),
            None => inbox.refused = true,
        }
    }

    /// Waits for the answer to request `id` (whose reply is `resp`) while
    /// the `GET` stream is read too: a server request on either is
    /// answered, a notification handed on; a reply stream that closes
    /// early is picked up again as in a session without listening.
    pub(crate) fn listen_for(
        &mut self,
        method: &str,
        id: &Value,
        resp: ureq::Response,
    ) -> Result<Value> {
        let mut pos = Position::default();
        let mut current = self.inbox().read(resp);
        let mut resumes = 0;
        loop {
            let next = self.inbox().next();
            let Some(incoming) = next else {
                return Err(Error::Protocol(format!("no answer to {method}")));
            };
            let answer = match incoming {
                Incoming::Event(s, event) if s == current => self.on_event(id, &mut pos, event)?,
                // Another stream's place is not this call's to resume from.
                Incoming::Event(_, event) => self.on_event(id, &mut Position::default(), event)?,
                Incoming::Message(m) => self.on_message(id, m)?,
                Incoming::End(s, _) if self.inbox().listening == Some(s) => {
                    // Opened again before the next request.
                    self.inbox().listening = None;
                    None
                }
                Incoming::End(s, broke) if s == current => {
                    if let Some(why) = broke {
                        return Err(Error::Transport(why));
                    }
                    resumes += 1;
                    if resumes > MAX_RESUMES {
                        return Err(Error::Protocol(format!(
                            "{method}: the stream was picked up {MAX_RESUMES} times without an answer"
                        )));
                    }
                    let resp = self.reconnect(method, id, &pos)?;
                    current = self.inbox().read(resp);
                    None
                }
                Incoming::End(..) => None,
            };
            if let Some(result) = answer {
                return Ok(result);
            }
        }
    }

    fn inbox(&mut self) -> &mut Inbox {
        self.settings.inbox.get_or_insert_with(Inbox::new)
    }
}
