// Starts and stops `wrangler dev` for end-to-end tests: a free port on
// 127.0.0.1, a fresh (or given) --persist-to directory, stopped by PID.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');

/** A port nothing listens on right now. */
export async function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.unref();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** A fresh directory for Durable Object storage. */
export function freshPersistDir() {
  return mkdtempSync(join(tmpdir(), 'durable-mcp-state-'));
}

/**
 * A worker's wrangler.toml as the tests serve it (the fixtures worker's, or
 * that of `worker`, a worker directory): the bundle built once, with no
 * build step, so wrangler neither rebuilds nor restarts the worker when a
 * source file is touched mid-test. Written beside a copy of its .dev.vars
 * (wrangler reads the one next to its config).
 */
function prebuiltConfig(dir, worker = ROOT) {
  mkdirSync(dir, { recursive: true });
  const toml = readFileSync(join(worker, 'wrangler.toml'), 'utf8')
    .replace(/^\[build\][^[]*/m, '')
    .replace(/^main = "([^"]+)"/m, (_, main) => `main = ${JSON.stringify(join(worker, main))}`);
  const config = join(dir, 'wrangler.toml');
  writeFileSync(config, toml);
  if (existsSync(join(worker, '.dev.vars'))) copyFileSync(join(worker, '.dev.vars'), join(dir, '.dev.vars'));
  return config;
}

/**
 * Starts `wrangler dev` (by default on the fixtures worker, built once by the
 * test script). Resolves when /mcp answers.
 * @param {{persistTo?: string, port?: number, vars?: Record<string,string>,
 *   cwd?: string, prebuilt?: string, env?: Record<string,string>, startupMs?: number,
 *   misconfigured?: boolean}} opts
 *   cwd: a worker directory with its own wrangler.toml (it then builds
 *   itself, as `wrangler dev` does for a user); prebuilt: a worker directory
 *   whose build/ is already there (served as the fixtures are); env: extra
 *   environment.
 */
export async function startWrangler(opts = {}) {
  // A free port can be taken by another process between our check and
  // workerd's bind: when the caller did not ask for a port, try others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      if (opts.port || attempt >= 3 || !/Address already in use/.test(String(e.message))) throw e;
    }
  }
}

async function startOnce(opts) {
  const port = opts.port ?? (await freePort());
  const persistTo = opts.persistTo ?? freshPersistDir();
  const vars = opts.vars ?? {};
  const args = [WRANGLER, 'dev', '--ip', '127.0.0.1', '--port', String(port), '--persist-to', persistTo,
    '--show-interactive-dev-session=false', '--inspector-port', String(await freePort())];
  if (!opts.cwd) args.push('--config', prebuiltConfig(join(persistTo, 'config'), opts.prebuilt));
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`);
  const logPath = join(persistTo, `wrangler-${port}.log`);
  const log = openSync(logPath, 'a');
  const child = spawn(process.execPath, args, {
    cwd: opts.cwd ?? ROOT,
    detached: true, // its own process group, so stop() also ends workerd
    stdio: ['ignore', log, log],
    env: {
      ...process.env, DMCP_SKIP_BUILD: '1', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false',
      ...(opts.env ?? {}),
    },
  });
  return untilUp(child, { url: `http://127.0.0.1:${port}/mcp`, port, persistTo, logPath },
    { what: 'wrangler dev', deadlineMs: opts.startupMs ?? 120_000, everyMs: 250, misconfigured: opts.misconfigured });
}

/**
 * A started server process (its own process group) as the tests hold it:
 * `fields` plus its pid, kill() (kill -9 of the group: a crash, no clean
 * shutdown) and stop(); resolves once /mcp answers, or stops it and throws
 * with the end of its log.
 */
/** Resolves once no process of group `pid` is left (SIGKILL after 5 s). */
export async function groupGone(pid) {
  const alive = () => { try { process.kill(-pid, 0); return true; } catch { return false; } };
  for (const deadline = Date.now() + 5000; alive();) {
    if (Date.now() > deadline) {
      try { process.kill(-pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
      if (Date.now() > deadline + 5000) return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function untilUp(child, fields, { what, deadlineMs, everyMs, misconfigured }) {
  const server = {
    ...fields, pid: child.pid,
    kill() {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((ok) => child.once('exit', ok));
        try { process.kill(-child.pid, 'SIGTERM'); } catch { return; }
        const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch {} }, 5000);
        await exited;
        clearTimeout(timer);
      }
      // wrangler exits before the workerd it started has: a server started
      // next on the same --persist-to must not find the old one still
      // running its objects' alarms on the same files.
      await groupGone(child.pid);
    },
  };
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const r = await fetch(fields.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
      // Our parse error (or 401 when bearer auth is on; 500 for a test that
      // misconfigures it on purpose): the worker is up.
      if (r.status === 400 || r.status === 401 || (misconfigured && r.status === 500)) return server;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  await server.stop();
  throw new Error(`${what} did not come up on ${fields.url}; log:\n${readFileSync(fields.logPath, 'utf8').slice(-4000)}`);
}
