# Serves both peer bundles (built by build.sh into dist/) with plain workerd:
#
#   mkdir -p /tmp/peer-do
#   workerd serve bench/peer/workerd.capnp -d peer-do-storage=/tmp/peer-do \
#     -s stateless=127.0.0.1:PORT_A -s session=127.0.0.1:PORT_B
#
# The compatibility date and flags must match wrangler.*.toml: the bundles were
# built (nodejs_compat polyfill choices) for exactly these.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "stateless", worker = .statelessWorker),
    (name = "session", worker = .sessionWorker),
    # Where the session Durable Objects keep their SQLite files. No path on
    # purpose: `-d peer-do-storage=<existing dir>` names a fresh one per run.
    (name = "peer-do-storage", disk = (writable = true)),
  ],
  # Loopback only; the ports are placeholders that -s overrides.
  sockets = [
    (name = "stateless", address = "127.0.0.1:8791", http = (), service = "stateless"),
    (name = "session", address = "127.0.0.1:8792", http = (), service = "session"),
  ],
);

const statelessWorker :Workerd.Worker = (
  modules = [ (name = "stateless.js", esModule = embed "dist/stateless/stateless.js") ],
  compatibilityDate = "2026-04-20",
  compatibilityFlags = ["nodejs_compat"],
);

const sessionWorker :Workerd.Worker = (
  modules = [ (name = "session.js", esModule = embed "dist/session/session.js") ],
  compatibilityDate = "2026-04-20",
  compatibilityFlags = ["nodejs_compat"],
  # McpAgent.serve() finds the namespace as env.MCP_OBJECT.
  bindings = [ (name = "MCP_OBJECT", durableObjectNamespace = "PeerSession") ],
  # enableSql mirrors new_sqlite_classes: agents use ctx.storage.sql and
  # storage.kv, which exist only on SQLite-backed objects.
  durableObjectNamespaces = [
    (className = "PeerSession", uniqueKey = "durable-mcp-bench-peer-session", enableSql = true),
  ],
  # Not inMemory: this workerd's in-memory storage is not SQLite-backed even
  # with enableSql, and agents then fail with "storage.kv ... only available
  # for SQLite-backed Durable Objects".
  durableObjectStorage = (localDisk = "peer-do-storage"),
);
