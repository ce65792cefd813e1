//! The Durable Object behind the `McpObject` class that [`crate::entry!`]
//! declares. An instance is a durable call, a session or the listen hub
//! ([`crate::host`] tells them apart); this file only opens its storage,
//! holds its open streams (a cache of connections, never the source of
//! truth) and applies the effects the core returns.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Duration;

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use worker::{Env, Request, Response, Result, State};

use super::call_store::SqliteStore;
use super::convert::{to_http_request, to_worker_response};
use super::index_store::SqliteIndex;
use super::log_rows::Held;
#[cfg(feature = "limits")]
use super::meter_store::SqliteMeter as Meter;
/// Without the `limits` feature no meter is asked: its store is empty.
#[cfg(not(feature = "limits"))]
type Meter = crate::limits::NoMeter;
use super::session_store::{MetaCache, SqliteSessionStore};
use super::task_store::SqliteTaskStore;
use super::{broadcast, request_env, server, Build};
use crate::effects::{Changes, Effect, Listen, Push, Reply};
use crate::host::{self, Stores};
use crate::http::encode_all;
use crate::server::{error_response, Server};

/// The Durable Object namespace binding the Worker reaches objects through.
pub(crate) const BINDING: &str = "MCP_OBJECTS";

/// One object's state in memory: its storage handle and open streams.
pub struct Object {
    state: State,
    env: Env,
    build: Build,
    /// Open response streams by session stream id.
    live: RefCell<HashMap<String, Vec<UnboundedSender<Vec<u8>>>>>,
    /// The hub's `subscriptions/listen` streams.
    listeners: RefCell<Vec<(UnboundedSender<Vec<u8>>, Listen)>>,
    /// A session object's session row, as last read or written.
    session_meta: MetaCache,
    /// When its alarm is armed for, as far as this instance knows (`None`:
    /// not known yet; asked once, on the first [`Effect::WakeBy`]).
    alarm: Cell<Option<Option<u64>>>,
    /// Its kept journals as last read or written (see [`Held`]).
    held: Held,
}

impl Object {
    /// A new instance (the runtime makes one per object when it wakes).
    pub fn new(state: State, env: Env, build: Build) -> Self {
        Self {
            state,
            env,
            build,
            live: RefCell::new(HashMap::new()),
            listeners: RefCell::new(Vec::new()),
            session_meta: RefCell::new(None),
            alarm: Cell::new(None),
            held: Held::default(),
        }
    }

    /// A request the Worker forwarded here.
    pub async fn fetch(&self, req: Request) -> Result<Response> {
        let isolate = match server(&self.env, self.build) {
            Ok(s) => s,
            Err(e) => return to_worker_response(error_response(&e, None), None),
        };
        let server = &isolate.server;
        let http = to_http_request(
            req.inner(),
            server.config.max_body_bytes,
            &isolate.object_headers,
        )
        .await?;
        let (call, session, task, index, meter) = self.storage();
        let stores = Stores {
            call: &call,
            session: &session,
            task: &task,
            index: &index,
            meter: &meter,
        };
        let env = request_env();
        super::refresh_paused(&isolate, &self.env, env.now_ms, None);
        let reply = host::handle_in_object(server, &http, &env, &stores).await;
        let watchers = host::watchers_for(&reply.effects, stores.task);
        let response = self.apply(server, reply, &watchers).await;
        if let Some(sent) = super::send_notes(server, &self.env) {
            sent.await;
        }
        super::write_logs(server);
        response
    }

    /// The object's alarm.
    pub async fn alarm(&self) -> Result<Response> {
        let isolate =
            server(&self.env, self.build).map_err(|e| worker::Error::RustError(e.message))?;
        let server = &isolate.server;
        // Firing, it is no longer armed.
        self.alarm.set(Some(None));
        let (call, session, task, index, meter) = self.storage();
        let stores = Stores {
            call: &call,
            session: &session,
            task: &task,
            index: &index,
            meter: &meter,
        };
        let now_ms = request_env().now_ms;
        super::refresh_paused(&isolate, &self.env, now_ms, None);
        #[allow(unused_mut)]
        let mut effects = host::alarm(server, &stores, now_ms)
            .await
            .map_err(|e| worker::Error::RustError(e.message))?;
        #[cfg(feature = "limits")]
        self.admissions(server, &stores, now_ms, &mut effects)
            .await?;
        let watchers = host::watchers_for(&effects, stores.task);
        let reply = Reply {
            response: crate::http::HttpResponse::empty(204),
            effects,
        };
        let response = self.apply(server, reply, &watchers).await;
        if let Some(sent) = super::send_notes(server, &self.env) {
            sent.await;
        }
        super::write_logs(server);
        response
    }

    /// A task a limit held back asks its meter (an [`Effect::Admit`]); the
    /// answer is this object's to take in.
    #[cfg(feature = "limits")]
    async fn admissions(
        &self,
        server: &Server,
        stores: &Stores<'_>,
        now_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Result<()> {
        let asks: Vec<_> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Admit(a) => Some(a.clone()),
                _ => None,
            })
            .collect();
        for a in &asks {
            let (name, req) = host::admission_request(a);
            let answer = match super::forward(&self.env, &name, &req, None).await {
                Ok(resp) => super::read_response(resp).await,
                Err(_) => crate::http::HttpResponse::empty(502),
            };
            let more = host::admitted(server, stores, a, &answer, now_ms)
                .await
                .map_err(|e| worker::Error::RustError(e.message))?;
            effects.extend(more);
        }
        Ok(())
    }

    /// The object's SQLite as a durable call's, a session's and a task's
    /// store (the core decides which it is; none writes until it must).
    fn storage(
        &self,
    ) -> (
        SqliteStore<'_>,
        SqliteSessionStore<'_>,
        SqliteTaskStore<'_>,
        SqliteIndex<'_>,
        Meter,
    ) {
        let sql = self.state.storage().sql();
        (
            SqliteStore::new(sql.clone(), &self.held),
            SqliteSessionStore::new(sql.clone(), &self.session_meta, &self.held),
            SqliteTaskStore::new(sql.clone(), &self.held),
            SqliteIndex::new(sql.clone(), &self.held),
            Meter::new(sql),
        )
    }

    /// Applies a reply's effects in order, then converts its response
    /// (held open when an effect asked for that).
    async fn apply(&self, server: &Server, reply: Reply, watchers: &[String]) -> Result<Response> {
        let mut held: Option<UnboundedReceiver<Vec<u8>>> = None;
        for effect in &reply.effects {
            if let Some(rx) = self.apply_one(effect).await? {
                held = Some(rx);
            }
        }
        broadcast(server, &self.env, &reply.effects, watchers).await;
        to_worker_response(reply.response, held)
    }

    /// Applies one effect: the stream the response is to be held open
    /// on, if the effect opened one.
    async fn apply_one(&self, effect: &Effect) -> Result<Option<UnboundedReceiver<Vec<u8>>>> {
        match effect {
            // Sent to the hub by `apply`, together.
            Effect::ListChanged(_) | Effect::TaskChanged(_) | Effect::Indexed(_) => {}
            // Asked by `alarm`, which takes the answer in.
            Effect::Admit(_) => {}
            Effect::Listen(listen) => {
                let (tx, rx) = unbounded();
                self.listeners.borrow_mut().push((tx, listen.clone()));
                return Ok(Some(rx));
            }
            Effect::Fanout(changes) => self.fan_out(changes),
            // Before the stream's first frame goes: once its client reads
            // the acknowledgement, every task it named tells this hub.
            Effect::Watch(watch) => {
                for (name, req) in host::watch_requests(watch) {
                    if let Err(e) = super::forward(&self.env, &name, &req, None).await {
                        worker::console_error!("telling {name} of a listener failed: {e}");
                    }
                }
            }
            Effect::HoldOpen(stream) => {
                let (tx, rx) = unbounded();
                self.live
                    .borrow_mut()
                    .entry(stream.clone())
                    .or_default()
                    .push(tx);
                return Ok(Some(rx));
            }
            Effect::Push(push) => self.deliver(push),
            Effect::WakeAt(at_ms) => self.arm(*at_ms).await?,
            Effect::WakeBy(by_ms) => self.wake_by(*by_ms).await?,
            Effect::DeleteStorage => self.delete_storage().await?,
        }
        Ok(None)
    }

    /// Sends the hub's streams the frames `changes` make for each.
    fn fan_out(&self, changes: &Changes) {
        // Streams whose clients went away are dropped here.
        self.listeners.borrow_mut().retain(|(tx, listen)| {
            listen.frames_for(changes).iter().all(|f| {
                tx.unbounded_send(encode_all(std::slice::from_ref(f)).into_bytes())
                    .is_ok()
            })
        });
    }

    /// Arms the alarm for `by_ms` unless it is armed for sooner (what it
    /// is armed for is asked of storage once, then kept).
    async fn wake_by(&self, by_ms: u64) -> Result<()> {
        let armed = match self.alarm.get() {
            Some(known) => known,
            None => {
                let at = self.state.storage().get_alarm().await?;
                at.map(|ms| u64::try_from(ms).unwrap_or(0))
            }
        };
        if Effect::must_arm(armed, by_ms) {
            self.arm(by_ms).await?;
        } else {
            self.alarm.set(Some(armed));
        }
        Ok(())
    }

    /// Deletes the object's storage and forgets what it held of it.
    async fn delete_storage(&self) -> Result<()> {
        // Dropping the senders ends those responses.
        self.live.borrow_mut().clear();
        // Before the await: a request arriving meanwhile must
        // not find the session in memory.
        self.session_meta.borrow_mut().take();
        self.held.clear();
        self.state.storage().delete_all().await?;
        // Whether that took the alarm too depends on the
        // compatibility date: ask again when it matters.
        self.alarm.set(None);
        Ok(())
    }

    /// Arms the alarm for `at_ms` (ms since the epoch), replacing any other.
    async fn arm(&self, at_ms: u64) -> Result<()> {
        let delay = at_ms.saturating_sub(request_env().now_ms).max(1);
        self.state
            .storage()
            .set_alarm(Duration::from_millis(delay))
            .await?;
        self.alarm.set(Some(Some(at_ms)));
        Ok(())
    }

    /// Writes pushed events to the streams held open for them.
    fn deliver(&self, push: &Push) {
        let mut live = self.live.borrow_mut();
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
