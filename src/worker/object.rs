//! The `McpObject` Durable Object class. An instance is either one durable
//! call (named `call:<id>`) or one 2025-11-25 session (`session:<id>`); the
//! Worker says which in an internal header. It runs the same server with its
//! SQLite storage, holds the session's open SSE streams in memory (a cache
//! of connections, never the source of truth), and cleans up on its alarm.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use futures_channel::mpsc::{unbounded, UnboundedSender};
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

use super::call_store::SqliteStore;
use super::session_store::SqliteSessionStore;
use super::{
    broadcast, config_from_env, request_env, to_http_request, to_worker_response, CALL_ID_HEADER,
    HUB_HEADER, SESSION_ID_HEADER, SESSION_NEW_HEADER,
};
use crate::error::McpError;
use crate::http::{encode_all, HttpRequest, Listen};
use crate::server::{error_response, Durable, Server};
use crate::session::Push;

/// One durable call, or one session.
#[durable_object]
pub struct McpObject {
    state: State,
    env: Env,
    /// Open response streams by session stream id.
    live: RefCell<HashMap<String, Vec<UnboundedSender<Vec<u8>>>>>,
    /// The hub's `subscriptions/listen` streams.
    listeners: RefCell<Vec<(UnboundedSender<Vec<u8>>, Listen)>>,
}

fn rust_error(e: McpError) -> worker::Error {
    worker::Error::RustError(e.message)
}

impl DurableObject for McpObject {
    fn new(state: State, env: Env) -> Self {
        Self {
            state,
            env,
            live: RefCell::new(HashMap::new()),
            listeners: RefCell::new(Vec::new()),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let http = to_http_request(req).await?;
        let config = match config_from_env(&self.env) {
            Ok(c) => c,
            Err(e) => {
                return to_worker_response(error_response(&McpError::internal(e), None), None)
            }
        };
        let server = Server::new(config.clone(), crate::tools::registry(config.fixtures));
        match http.header(HUB_HEADER) {
            Some("listen") => return self.listen(&server, &http).await,
            Some("broadcast") => return self.broadcast_here(&http),
            _ => {}
        }
        if let Some(session_id) = http.header(SESSION_ID_HEADER).map(str::to_string) {
            let new = http.header(SESSION_NEW_HEADER).is_some();
            return self.session(&server, &http, &session_id, new).await;
        }
        let Some(call_id) = http.header(CALL_ID_HEADER).map(str::to_string) else {
            return Response::error("this object is reached only through the worker", 400);
        };
        let store = SqliteStore::new(self.state.storage().sql());
        let durable = Durable {
            call_id,
            store: &store,
        };
        let resp = server.handle_durable(&http, &request_env(), &durable).await;
        broadcast(&self.env, &resp.list_changed).await;
        // Idle TTL: every request pushes the deletion back.
        self.state
            .storage()
            .set_alarm(Duration::from_millis(config.state_ttl_ms))
            .await?;
        to_worker_response(resp, None)
    }

    async fn alarm(&self) -> Result<Response> {
        let sql = self.state.storage().sql();
        if SqliteSessionStore::exists(&sql) {
            let config = config_from_env(&self.env).map_err(worker::Error::RustError)?;
            let server = Server::new(config.clone(), crate::tools::registry(config.fixtures));
            let store = SqliteSessionStore::new(sql).map_err(rust_error)?;
            let next = crate::session::on_alarm(&server, &store, request_env().now_ms)
                .map_err(rust_error)?;
            if let Some(at) = next {
                self.set_alarm_at(at).await?;
                return Response::ok("rescheduled");
            }
        }
        // Alarms are at-least-once: deleting what is already gone is fine.
        self.live.borrow_mut().clear();
        self.state.storage().delete_all().await?;
        Response::ok("deleted")
    }
}

impl McpObject {
    /// The hub: registers a `subscriptions/listen` stream.
    async fn listen(&self, server: &Server, http: &HttpRequest) -> Result<Response> {
        let resp = server.handle_forwarded(http, &request_env()).await;
        let live = resp.listen.clone().map(|listen| {
            let (tx, rx) = unbounded();
            self.listeners.borrow_mut().push((tx, listen));
            rx
        });
        to_worker_response(resp, live)
    }

    /// The hub: tells every listener that asked which lists changed; drops
    /// the listeners whose clients went away.
    fn broadcast_here(&self, http: &HttpRequest) -> Result<Response> {
        let kinds: Vec<String> = serde_json::from_slice(&http.body).unwrap_or_default();
        self.listeners.borrow_mut().retain(|(tx, listen)| {
            kinds
                .iter()
                .filter_map(|k| listen.frame_for(k))
                .all(|frame| {
                    let event = encode_all(&[crate::http::SseEvent::message(&frame)]).into_bytes();
                    tx.unbounded_send(event).is_ok()
                })
        });
        Ok(Response::empty()?.with_status(204))
    }

    /// Serves a request of the session this object holds.
    async fn session(
        &self,
        server: &Server,
        http: &HttpRequest,
        session_id: &str,
        new: bool,
    ) -> Result<Response> {
        // An unknown id writes nothing: no storage for sessions that never were.
        if !new && !SqliteSessionStore::exists(&self.state.storage().sql()) {
            return to_worker_response(error_response(&crate::session::not_found(), None), None);
        }
        let store = match SqliteSessionStore::new(self.state.storage().sql()) {
            Ok(s) => s,
            Err(e) => return to_worker_response(error_response(&e, None), None),
        };
        let reply =
            crate::session::handle(server, http, &request_env(), &store, session_id, new).await;
        self.deliver(reply.pushes);
        match reply.wake_at_ms {
            Some(at) => self.set_alarm_at(at).await?,
            None => {
                // The session is gone (DELETE): drop its streams and storage.
                self.live.borrow_mut().clear();
                self.state.storage().delete_all().await?;
            }
        }
        let live = reply.live.map(|stream| {
            let (tx, rx) = unbounded();
            self.live.borrow_mut().entry(stream).or_default().push(tx);
            rx
        });
        to_worker_response(reply.response, live)
    }

    /// Sends pushed events to the streams held open for them.
    fn deliver(&self, pushes: Vec<Push>) {
        let mut live = self.live.borrow_mut();
        for push in pushes {
            let bytes = encode_all(&push.events).into_bytes();
            if let Some(senders) = live.get_mut(&push.stream) {
                senders.retain(|tx| bytes.is_empty() || tx.unbounded_send(bytes.clone()).is_ok());
            }
            if push.close {
                // Dropping the senders ends those responses.
                live.remove(&push.stream);
            }
        }
    }

    async fn set_alarm_at(&self, at_ms: u64) -> Result<()> {
        let delay = at_ms.saturating_sub(request_env().now_ms).max(1);
        self.state
            .storage()
            .set_alarm(Duration::from_millis(delay))
            .await
    }
}
