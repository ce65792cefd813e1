// Bundling the bench's workers and serving them from plain `workerd serve`:
// shared by the throughput lanes (bench/run.mjs), the cold starts
// (bench/cold-start.mjs), the many-at-once runs (bench/many.mjs) and the
// cost count (bench/cost.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { freePort } from '../tests/e2e/wrangler.mjs';

export const ROOT = resolve(import.meta.dirname, '..');
export const OUT = join(ROOT, 'bench/.out');
export const WORKERD = join(ROOT, 'node_modules/workerd/bin/workerd');
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');
/** The in-workerd counters `meter: true` wraps a worker in (bench/meter). */
const METER = join(ROOT, 'bench/meter/meter.js');

/** Open file descriptors workerd may hold before a window starts (see `serve`). */
const FD_BUDGET = Number(process.env.BENCH_FD_BUDGET ?? 2000);

/** `wrangler deploy --dry-run` of `w` (ours built with wasm-opt) into bench/.out/<name>. */
export function bundle(w) {
  const out = join(OUT, w.name);
  rmSync(out, { recursive: true, force: true });
  const r = spawnSync(process.execPath, [WRANGLER, 'deploy', '--dry-run', '--outdir', out], {
    cwd: join(ROOT, w.dir), encoding: 'utf8',
    env: { ...process.env, DMCP_WASM_OPT: '1', DMCP_SKIP_BUILD: '0', CARGO_TARGET_DIR: join(ROOT, 'target') },
  });
  if (r.status !== 0) throw new Error(`bundling ${w.name} failed:\n${r.stdout}\n${r.stderr}`);
  return out;
}

/** A bundle's modules: its main module first, then the rest (wasm included). */
export function bundleFiles(dir) {
  const files = readdirSync(dir).filter((f) => /\.(m?js|wasm)$/.test(f) && !f.endsWith('.map'));
  const main = files.find((f) => f === 'shim.js' || f === 'index.js') ?? files.find((f) => f.endsWith('.js'));
  return [main, ...files.filter((f) => f !== main)];
}

/** A capnp constant name for a worker (camelCase, no dashes). */
const ident = (name) => `${name.replace(/-([a-z])/g, (_, c) => c.toUpperCase())}Worker`;

/**
 * One worker of the workerd config: its modules, bindings and objects.
 * With `w.meter`, its main module is a generated one that wraps the
 * bundle's (renamed `inner.js`) in bench/meter's counters.
 */
function capnpWorker(w, configDir) {
  const [main, ...rest] = bundleFiles(w.out);
  const embed = (name, kind, path) => `(name = ${JSON.stringify(name)}, ${kind} = embed ${JSON.stringify(relative(configDir, path))})`;
  const kindOf = (f) => (f.endsWith('.wasm') ? 'wasm' : 'esModule');
  const mods = w.meter
    ? [embed('meter-main.js', 'esModule', meterMain(w, configDir)), embed('inner.js', 'esModule', join(w.out, main)),
      embed('meter.js', 'esModule', METER)]
    : [embed(main, 'esModule', join(w.out, main))];
  for (const f of rest) mods.push(embed(f, kindOf(f), join(w.out, f)));
  const bindings = [
    ...Object.entries(w.classes).map(([b, c]) => `(name = ${JSON.stringify(b)}, durableObjectNamespace = ${JSON.stringify(c)})`),
    ...Object.entries(w.vars).map(([k, v]) => `(name = ${JSON.stringify(k)}, text = ${JSON.stringify(v)})`),
  ];
  const namespaces = Object.values(w.classes).map((c) => `(className = ${JSON.stringify(c)}, uniqueKey = ${JSON.stringify(`${w.name}-${c}`)}, enableSql = true)`);
  return `const ${ident(w.name)} :Workerd.Worker = (
  modules = [${mods.join(', ')}],
  compatibilityDate = "2026-04-20",
  compatibilityFlags = [${(w.flags ?? []).map((f) => JSON.stringify(f)).join(', ')}],
  bindings = [${bindings.join(', ')}],
  durableObjectNamespaces = [${namespaces.join(', ')}],
  durableObjectStorage = ${namespaces.length ? '(localDisk = "do-disk")' : '(none = void)'},
);`;
}

/** The generated main module of a metered worker: its entry and classes, wrapped. */
function meterMain(w, configDir) {
  const file = join(configDir, `${w.name}-meter-main.js`);
  writeFileSync(file, `import Entry, * as inner from './inner.js';
import { meterEntry, meterObject } from './meter.js';
export default meterEntry(Entry);
${Object.values(w.classes).map((c) => `export const ${c} = meterObject(inner.${c});`).join('\n')}
`);
  return file;
}

/**
 * A whole workerd config: each worker on its port, objects on `disk`;
 * `v8Flags`, V8's own flags (the cold starts' compile trace).
 */
export function capnpConfig(workers, ports, disk, configDir = OUT, v8Flags = []) {
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (${v8Flags.length ? `\n  v8Flags = [${v8Flags.map((f) => JSON.stringify(f)).join(', ')}],` : ''}
  services = [${workers.map((w) => `(name = ${JSON.stringify(w.name)}, worker = .${ident(w.name)})`).join(', ')},
    (name = "do-disk", disk = (path = ${JSON.stringify(disk)}, writable = true)),
    # The OAuth lanes' issuer keys are served on loopback (the default allows public addresses only).
    (name = "internet", network = (allow = ["public", "local"]))],
  sockets = [${workers.map((w) => `(name = ${JSON.stringify(w.name)}, address = "127.0.0.1:${ports[w.name]}", http = (), service = ${JSON.stringify(w.name)})`).join(', ')}],
);
${workers.map((w) => capnpWorker(w, configDir)).join('\n')}
`;
}

/**
 * Serves `workers` from one `workerd serve`, each on a free loopback port,
 * their objects in a fresh directory (`storage`, default
 * bench/.out/do-storage). Resolves once every worker answers.
 */
export async function serve(workers, { storage = join(OUT, 'do-storage'), config: name = 'workerd.capnp' } = {}) {
  const ports = {};
  for (const w of workers) ports[w.name] = await freePort();
  // Objects keep SQLite on disk (workerd's in-memory storage has no SQL):
  // a fresh directory per run. (On tmpfs the DO lanes wait on no I/O, but
  // a run's many thousand fresh objects then ran workerd into
  // SQLITE_NOMEM and failed requests by the thousand.)
  const disk = storage;
  rmSync(disk, { recursive: true, force: true });
  mkdirSync(disk, { recursive: true });
  const file = join(OUT, name);
  writeFileSync(file, capnpConfig(workers, ports, disk));
  let child;
  const start = async () => {
    child = spawn(WORKERD, ['serve', file, '--experimental'], { cwd: OUT, stdio: ['ignore', 'inherit', 'inherit'], detached: true });
    for (const w of workers) {
      const url = `http://127.0.0.1:${ports[w.name]}/`;
      for (let i = 0; ; i++) {
        try { await fetch(url, { method: 'POST', body: '{}' }); break; } catch {
          if (i > 200 || child.exitCode !== null) { stop(); throw new Error(`workerd did not serve ${w.name}`); }
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  };
  // Stopping also frees the objects' files (on tmpfs they hold memory).
  const stop = () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    rmSync(disk, { recursive: true, force: true });
  };
  // Every object workerd has opened keeps its SQLite database open (2–3
  // file descriptors), and a DO lane opens a few thousand fresh ones per
  // window. Past some 3,000 open objects workerd's SQLite failed with
  // SQLITE_NOMEM and every DO request, the ceiling's too, was a 500
  // (2026-11-25: 550 errors in one run's third durable round; thousands
  // when the DO lanes ran back to back). So before a window, a workerd
  // holding more than `FD_BUDGET` descriptors (after a DO lane's window,
  // that is) is restarted on the same ports and the same storage (the
  // session and the task the lanes use are reopened from disk when next
  // asked for), and the lane warmed again.
  const freshIfNeeded = async () => {
    let open = 0;
    try { open = readdirSync(`/proc/${child.pid}/fd`).length; } catch { return false; }
    if (open <= FD_BUDGET) return false;
    const exited = new Promise((ok) => child.once('exit', ok));
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    await exited;
    await start();
    console.error(`(workerd restarted: it held ${open} file descriptors)`);
    return true;
  };
  // However the bench ends (a failed preflight too), workerd goes with it.
  process.once('exit', () => { try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ } });
  await start();
  return { ports, stop, freshIfNeeded, disk, pid: () => child.pid };
}
