//! Who is told of a change ([`announce`]): a list's change every listen
//! hub (rare, and any stream may want it); a task's change only the hubs
//! holding a stream that named the task, which each such hub told the task
//! when the stream opened ([`watch_requests`], served by [`watch`]). A task
//! nobody listens for costs no hub anything, so no hub hears from every
//! task of the deployment, and a change costs at most one request per hub
//! shard (`LISTEN_SHARDS`), however many streams listen.

use super::route::{hub_name, HUB_HEADER, TASK_ID_HEADER, WATCH_HEADER};
use crate::effects::{Changes, Effect, Reply, Watch};
use crate::http::{HttpRequest, HttpResponse};
use crate::server::task::TaskStore;
use crate::server::{error_response, Server};

/// The requests that tell who must hear of `changes`: the lists to every
/// hub shard, the tasks to `watchers` (the hubs that said they listen for
/// them: [`TaskStore::watchers`]), each change to the admin index to the
/// index shard keeping its entry ([`index_shard`]). One request per object.
pub fn announce(
    server: &Server,
    changes: &Changes,
    watchers: &[String],
) -> Vec<(String, HttpRequest)> {
    let shards = server.config.listen_shards.max(1);
    let mut to: Vec<(String, Changes)> = Vec::new();
    if !changes.lists.is_empty() {
        for shard in 0..shards {
            part(&mut to, hub_name(shard, shards))
                .lists
                .clone_from(&changes.lists);
        }
    }
    if !changes.tasks.is_empty() {
        for hub in watchers {
            part(&mut to, hub.clone()).tasks.clone_from(&changes.tasks);
        }
    }
    for change in &changes.index {
        part(&mut to, index_shard(change.handle()))
            .index
            .push(change.clone());
    }
    to.into_iter()
        .map(|(name, c)| {
            let req = HttpRequest {
                method: "POST".into(),
                path: "/mcp".into(),
                headers: vec![(HUB_HEADER.to_string(), "broadcast".to_string())],
                body: serde_json::to_vec(&c).unwrap_or_default(),
            };
            (name, req)
        })
        .collect()
}

/// How many objects keep the admin index (`index:<n>`), each the entries
/// whose handle hashes to it. Fixed: a count that changed would strand
/// entries in the shards they were written to. A task's index hears of it
/// about four times (each status change, then its end), a session's twice:
/// at 10,000 new tasks a second, 128 shards each get about 300 requests a
/// second, under a third of an object's (bench/scale.mjs models it); a
/// listing asks each shard for one page.
pub const INDEX_SHARDS: u32 = 128;

/// The index shard keeping `handle`'s entry.
pub fn index_shard(handle: &str) -> String {
    // FNV-1a: stable across builds and isolates, unlike the std hasher.
    let hash = handle.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("index:{}", hash % INDEX_SHARDS)
}

/// Every index shard's name.
pub fn index_shards() -> impl Iterator<Item = String> {
    (0..INDEX_SHARDS).map(|n| format!("index:{n}"))
}

/// `name`'s share of what is told, made empty the first time.
fn part(to: &mut Vec<(String, Changes)>, name: String) -> &mut Changes {
    let at = match to.iter().position(|(n, _)| *n == name) {
        Some(at) => at,
        None => {
            to.push((name, Changes::default()));
            to.len() - 1
        }
    };
    &mut to[at].1
}

/// The hubs a task's changes among `effects` go to (none without a
/// task change: nothing is read).
pub fn watchers_for(effects: &[Effect], store: &dyn TaskStore) -> Vec<String> {
    if !effects.iter().any(|e| matches!(e, Effect::TaskChanged(_))) {
        return Vec::new();
    }
    // Unreadable: nobody hears of this change, the task still runs.
    store.watchers().unwrap_or_default()
}

/// A listen stream `reply` opened in `hub`: it tells each task it named.
pub(super) fn listening(reply: &mut Reply, hub: &str) {
    let watch = reply.effects.iter().find_map(|e| match e {
        Effect::Listen(l) if !l.task_ids.is_empty() => Some(Watch {
            hub: hub.to_string(),
            principal: l.principal.clone(),
            task_ids: l.task_ids.clone(),
        }),
        _ => None,
    });
    reply.effects.extend(watch.map(Effect::Watch));
}

/// The requests telling each task `watch` names that its hub listens.
pub fn watch_requests(watch: &Watch) -> Vec<(String, HttpRequest)> {
    watch
        .task_ids
        .iter()
        .map(|id| {
            let req = HttpRequest {
                method: "POST".into(),
                path: "/mcp".into(),
                headers: vec![
                    (TASK_ID_HEADER.to_string(), id.clone()),
                    (WATCH_HEADER.to_string(), watch.hub.clone()),
                ],
                body: watch.principal.as_bytes().to_vec(),
            };
            (format!("task:{id}"), req)
        })
        .collect()
}

/// A task told that `hub` listens for it (the request's body: whose
/// stream). Only a task this object holds, owned by that principal,
/// remembers it: anything else writes nothing (an object is not made by
/// being named).
pub(super) fn watch(store: &dyn TaskStore, hub: &str, req: &HttpRequest) -> Reply {
    let principal = std::str::from_utf8(&req.body).unwrap_or_default();
    let result = store.load().and_then(|task| match task {
        Some(t) if t.principal == principal => store.watch(hub),
        _ => Ok(()),
    });
    match result {
        Ok(()) => Reply::new(HttpResponse::empty(204)),
        Err(e) => Reply::new(error_response(&e, None)),
    }
}

/// Whether `hub` names a listen hub of this server (a watch naming
/// anything else is not taken).
pub(super) fn is_hub(server: &Server, hub: &str) -> bool {
    let shards = server.config.listen_shards.max(1);
    (0..shards).any(|s| hub_name(s, shards) == hub)
}
