// Starts and stops a plain `workerd serve` of the fixtures worker's deploy
// bundle: requests reach the Worker as the runtime delivers them, with no
// `wrangler dev` proxy in between (which rewrites them: Host, bodies,
// Content-Length). The same interface as startWrangler: a free port on
// 127.0.0.1, a fresh (or given) persist directory, stopped by PID.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { freePort, freshPersistDir, untilUp } from './wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');
const WORKERD = join(ROOT, 'node_modules/workerd/bin/workerd');
const SHIM = join(ROOT, 'tests/fixtures-worker/build/worker/shim.mjs');
const BUNDLE = join(ROOT, 'target/e2e-workerd-bundle');

/**
 * The deploy bundle of the fixtures worker (what `wrangler deploy` uploads),
 * or of `worker` (a worker directory whose build/ is there, as startWrangler's
 * `prebuilt`), made once from its build and reused while that build is
 * unchanged.
 */
function bundle(worker) {
  const shim = worker ? join(worker, 'build/worker/shim.mjs') : SHIM;
  const out = worker ? join(worker, '.e2e-workerd-bundle') : BUNDLE;
  const stamp = join(out, '.built-from');
  const built = String(statSync(shim).mtimeMs);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === built) return out;
  rmSync(out, { recursive: true, force: true });
  const args = [WRANGLER, 'deploy', '--dry-run', '--outdir', out];
  // A worker's own wrangler.toml may build it first: bundle what is built.
  if (worker) args.push('--config', builtConfig(worker));
  const r = spawnSync(process.execPath, args, {
    cwd: worker ?? ROOT, encoding: 'utf8',
    env: { ...process.env, DMCP_SKIP_BUILD: '1', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false' },
  });
  if (r.status !== 0) throw new Error(`bundling ${worker ?? 'the fixtures worker'} failed:\n${r.stdout}\n${r.stderr}`);
  writeFileSync(stamp, built);
  return out;
}

/** `worker`'s wrangler.toml without its [build] step, beside it. */
function builtConfig(worker) {
  const dir = join(worker, '.e2e-workerd-config');
  mkdirSync(dir, { recursive: true });
  const toml = readFileSync(join(worker, 'wrangler.toml'), 'utf8')
    .replace(/^\[build\][^[]*/m, '')
    .replace(/^main = "([^"]+)"/m, (_, main) => `main = ${JSON.stringify(join(worker, main))}`);
  const config = join(dir, 'wrangler.toml');
  writeFileSync(config, toml);
  return config;
}

/** KEY=VALUE lines (the .dev.vars format), comments and blanks skipped. */
function dotVars(file) {
  if (!existsSync(file)) return {};
  const out = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
  }
  return out;
}

/** The `[vars]` of a wrangler.toml (flat `KEY = "value"` lines). */
function tomlVars(worker = ROOT) {
  const toml = readFileSync(join(worker, 'wrangler.toml'), 'utf8');
  const section = /^\[vars\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? '';
  const out = {};
  for (const m of section.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"/gm)) out[m[1]] = m[2];
  return out;
}

/** The workerd config: the bundle's modules, the vars as text bindings, objects on disk. */
function capnp(dir, port, storage, vars, configDir) {
  const files = readdirSync(dir).filter((f) => /\.(m?js|wasm)$/.test(f) && !f.endsWith('.map'));
  const main = files.find((f) => f === 'shim.js' || f === 'index.js') ?? files.find((f) => f.endsWith('.js'));
  const modules = [main, ...files.filter((f) => f !== main)].map((f) => {
    const kind = f.endsWith('.wasm') ? 'wasm' : 'esModule';
    // capnp resolves an embed against the config file's directory (an
    // absolute path would be looked up in its import path instead).
    return `(name = ${JSON.stringify(f)}, ${kind} = embed ${JSON.stringify(relative(configDir, join(dir, f)))})`;
  });
  const bindings = [
    '(name = "MCP_OBJECTS", durableObjectNamespace = "McpObject")',
    ...Object.entries(vars).map(([k, v]) => `(name = ${JSON.stringify(k)}, text = ${JSON.stringify(v)})`),
  ];
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .worker), (name = "do-disk", disk = (path = ${JSON.stringify(storage)}, writable = true)),
    # The Worker's outbound fetches (an OAuth issuer's keys) may reach the
    # test's own servers on loopback; the default allows public addresses only.
    (name = "internet", network = (allow = ["public", "local"]))],
  # A test may set request.cf with a cf-blob header (as Cloudflare's
  # edge sets it; no client reaches this socket but the tests).
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (cfBlobHeader = "cf-blob"), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [${modules.join(', ')}],
  compatibilityDate = "2026-04-20",
  bindings = [${bindings.join(', ')}],
  durableObjectNamespaces = [(className = "McpObject", uniqueKey = "durable-mcp-e2e-McpObject", enableSql = true)],
  durableObjectStorage = (localDisk = "do-disk"),
);
`;
}

/**
 * Starts `workerd serve` on the fixtures worker (or on `prebuilt`, a worker
 * directory whose build/ is there). Resolves when /mcp answers.
 * @param {{persistTo?: string, port?: number, vars?: Record<string,string>, misconfigured?: boolean,
 *   prebuilt?: string}} opts
 *   vars: added to wrangler.toml's [vars] and .dev.vars, as `--var` adds them.
 */
export async function startWorkerd(opts = {}) {
  const worker = opts.prebuilt;
  const dir = bundle(worker);
  const port = opts.port ?? (await freePort());
  const persistTo = opts.persistTo ?? freshPersistDir();
  const storage = join(persistTo, 'workerd-do');
  mkdirSync(storage, { recursive: true });
  const vars = { ...tomlVars(worker), ...dotVars(join(worker ?? ROOT, '.dev.vars')), ...(opts.vars ?? {}) };
  const config = join(persistTo, `workerd-${port}.capnp`);
  writeFileSync(config, capnp(dir, port, storage, vars, persistTo));
  const logPath = join(persistTo, `workerd-${port}.log`);
  const log = openSync(logPath, 'a');
  const child = spawn(WORKERD, ['serve', config, '--experimental', '--verbose'], {
    cwd: persistTo, detached: true, stdio: ['ignore', log, log],
  });
  return untilUp(child, { url: `http://127.0.0.1:${port}/mcp`, port, persistTo, logPath, via: 'workerd' },
    { what: 'workerd', deadlineMs: 30_000, everyMs: 100, misconfigured: opts.misconfigured });
}

/**
 * The objects' SQLite files under a persist directory, in either layout:
 * wrangler dev keeps them in v3/do/<worker>-McpObject, plain workerd in its
 * localDisk (workerd-do/<uniqueKey>).
 */
export function objectFiles(persistTo) {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.sqlite') && e.name !== 'metadata.sqlite') out.push(p);
    }
  };
  if (existsSync(persistTo)) walk(persistTo);
  return out.sort();
}
