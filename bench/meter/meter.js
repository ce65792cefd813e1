// What a worker costs in what Cloudflare bills, counted inside workerd, for
// the bench only (bench/cost.mjs, bench/many.mjs): the bench serves a
// bundle with a generated main module that wraps its entry and its Durable
// Object classes in these (bench/workerd.mjs, `meter: true`), which also
// patch each object's storage methods in place. Nothing of the worker's own
// code changes; the meter only watches what crosses:
//
// - Worker requests: every `fetch` of the entry (but `/__meter`);
// - Durable Object requests: every call made on a stub (a `fetch` or an
//   RPC method: each is a billed request), from the Worker or from an
//   object, plus every alarm invocation (billed as a request too);
// - SQLite rows read and written: the sums of `rowsRead` and `rowsWritten`
//   of every cursor `sql.exec` returned (the numbers Cloudflare bills);
//   and the bytes written: the lengths of the values bound to each
//   `INSERT` or `UPDATE` (bench/growth.mjs: what a round writes);
//   the key-value API (`get`, `put`, `delete`, `list`, sync or not) is
//   billed as rows too, counted here as one row per key;
// - alarms set (each `setAlarm` is billed as one row written) and fired,
//   and how late each fired against the time it was set for;
// - the wall time objects spent on requests (billed as duration), as
//   `Date.now()` sees it: in workerd it moves only when I/O completes.
//
// - the Durable Object requests (alarms included) each object received,
//   by the name it was reached by (`byObject`: bench/scale.mjs, how the
//   load spreads over the objects and which one is hot).
//
// `GET /__meter` answers the counts as JSON; `POST /__meter/reset` zeroes them.

const counts = {};
let lateness = [];
/** Requests by object name. */
let byObject = {};
function reset() {
  Object.assign(counts, { workerRequests: 0, objectRequests: 0, alarmsFired: 0, alarmsSet: 0, rowsRead: 0, rowsWritten: 0,
    kvRowsRead: 0, kvRowsWritten: 0, deleteAll: 0, objectWallMs: 0, bytesWritten: 0 });
  lateness = [];
  byObject = {};
}
reset();

/** Object names by id (`String(id)`), as the ids were made from them. */
const names = new Map();
const nameOf = (id) => names.get(String(id)) ?? String(id);
const countFor = (name) => { byObject[name] = (byObject[name] ?? 0) + 1; };

/** When each object's alarm is due, by object id (as last set). */
const due = new Map();

/** `GET /__meter` and `POST /__meter/reset`, or nothing for every other request. */
function meterAnswer(request) {
  if (!request.url.includes('/__meter')) return null;
  if (request.method === 'POST') reset();
  return Response.json({ ...counts, lateness, byObject });
}

/**
 * `target[key]`, a method bound to `target` (a runtime object refuses a
 * Proxy as `this`); not `constructor`, whose name worker-rs checks.
 * Functions are called with `Reflect.apply`, never `v.apply` or `v.bind`:
 * on an RPC stub's method those are remote properties, called remotely.
 */
const bound = (target, key) => {
  const v = Reflect.get(target, key);
  return typeof v === 'function' && key !== 'constructor' ? (...args) => Reflect.apply(v, target, args) : v;
};

const stubs = new WeakMap();
/** A stub (of object `name`) whose every method call counts as one Durable Object request. */
function meterStub(stub, name) {
  if (!stubs.has(stub)) {
    stubs.set(stub, new Proxy(stub, {
      get(t, k) {
        const v = Reflect.get(t, k);
        if (typeof v !== 'function') return v;
        return (...args) => { counts.objectRequests += 1; countFor(name); return Reflect.apply(v, t, args); };
      },
    }));
  }
  return stubs.get(stub);
}

const isNamespace = (v) => v && typeof v === 'object' && typeof v.idFromName === 'function' && typeof v.get === 'function';
function meterNamespace(ns) {
  return new Proxy(ns, {
    get(t, k) {
      if (k === 'get') return (id, ...rest) => meterStub(t.get(id, ...rest), nameOf(id));
      if (k === 'getByName') return (name, ...rest) => meterStub(t.getByName(name, ...rest), name);
      if (k === 'jurisdiction') return (...args) => meterNamespace(t.jurisdiction(...args));
      if (k === 'idFromName') {
        return (name) => { const id = t.idFromName(name); names.set(String(id), name); return id; };
      }
      return bound(t, k);
    },
  });
}

const envs = new WeakMap();
/** `env` with its Durable Object namespaces metered. */
function meterEnv(env) {
  if (!env || typeof env !== 'object') return env;
  if (!envs.has(env)) {
    envs.set(env, new Proxy(env, {
      get(t, k) {
        const v = Reflect.get(t, k);
        return isNamespace(v) ? meterNamespace(v) : v;
      },
    }));
  }
  return envs.get(env);
}

/**
 * Replaces `obj[key]` (a method) with `wrap(original)`, on the object
 * itself: a class extending `DurableObject` must be given the runtime's
 * own state object (a Proxy of it is refused), so the meter patches the
 * state's storage objects in place rather than wrapping them.
 */
function patch(obj, key, wrap) {
  const original = obj?.[key];
  if (typeof original !== 'function') return;
  const call = (...args) => Reflect.apply(original, obj, args);
  Object.defineProperty(obj, key, { value: wrap(call), configurable: true, writable: true });
}

/** A count of keys a key-value call names (`key`, `[keys]` or `{key: value}`). */
const keyCount = (arg) => (Array.isArray(arg) ? arg.length : arg && typeof arg === 'object' ? Object.keys(arg).length : 1);

/** The key-value API (`storage` itself, or `storage.kv`), counted as rows. */
function meterKv(kv) {
  patch(kv, 'get', (get) => (arg, ...rest) => { counts.kvRowsRead += keyCount(arg); return get(arg, ...rest); });
  patch(kv, 'put', (put) => (arg, ...rest) => { counts.kvRowsWritten += keyCount(arg); return put(arg, ...rest); });
  patch(kv, 'delete', (del) => (arg, ...rest) => { counts.kvRowsWritten += keyCount(arg); return del(arg, ...rest); });
  patch(kv, 'list', (list) => (...args) => {
    const out = list(...args);
    const add = (m) => { counts.kvRowsRead += Math.max(1, m?.size ?? [...(m ?? [])].length); return m; };
    return typeof out?.then === 'function' ? out.then(add) : add(out);
  });
}

/** Each object's SQL cursors not yet added up, by object id. */
const cursorsOf = new Map();
const cursors = (id) => {
  if (!cursorsOf.has(id)) cursorsOf.set(id, []);
  return cursorsOf.get(id);
};

const metered = new WeakSet();
/** An object's `ctx`/`state`, its storage metered in place (once: a new instance may get the same storage). */
function meterState(state) {
  const storage = state.storage;
  if (metered.has(storage)) return state;
  metered.add(storage);
  const id = String(state.id);
  patch(storage.sql, 'exec', (exec) => (...args) => {
    if (/^\s*(INSERT|UPDATE)/i.test(String(args[0]))) {
      for (const v of args.slice(1)) counts.bytesWritten += typeof v === 'string' ? v.length : 8;
    }
    const c = exec(...args);
    cursors(id).push(c);
    return c;
  });
  if (storage.kv) meterKv(storage.kv);
  meterKv(storage);
  patch(storage, 'setAlarm', (setAlarm) => (time, ...rest) => {
    counts.alarmsSet += 1;
    due.set(id, typeof time === 'number' ? time : new Date(time).getTime());
    return setAlarm(time, ...rest);
  });
  patch(storage, 'deleteAll', (deleteAll) => (...args) => { counts.deleteAll += 1; return deleteAll(...args); });
  return state;
}

/** Adds up the rows of an object's cursors run so far (each counted once). */
function drain(id) {
  for (const c of cursors(id).splice(0)) {
    counts.rowsRead += c.rowsRead ?? 0;
    counts.rowsWritten += c.rowsWritten ?? 0;
  }
}

/** The Worker's entry (a `WorkerEntrypoint` class or a `{ fetch }` object), metered. */
export function meterEntry(Entry) {
  if (typeof Entry === 'function') {
    return class MeteredEntry extends Entry {
      constructor(ctx, env) { super(ctx, meterEnv(env)); }
      fetch(request) {
        const own = meterAnswer(request);
        if (own) return own;
        counts.workerRequests += 1;
        return super.fetch(request);
      }
    };
  }
  return {
    ...Entry,
    fetch(request, env, ctx) {
      const own = meterAnswer(request);
      if (own) return own;
      counts.workerRequests += 1;
      return Entry.fetch(request, meterEnv(env), ctx);
    },
  };
}

/** A Durable Object class, metered (its requests are counted at the stubs). */
export function meterObject(Inner) {
  return class MeteredObject extends Inner {
    constructor(state, env) {
      super(meterState(state), meterEnv(env));
      this.meterId = String(state.id);
    }

    async fetch(request) {
      const start = Date.now();
      try {
        return await super.fetch(request);
      } finally {
        counts.objectWallMs += Date.now() - start;
        drain(this.meterId);
      }
    }

    async alarm(info) {
      const start = Date.now();
      counts.alarmsFired += 1;
      counts.objectRequests += 1;
      countFor(nameOf(this.meterId));
      const at = due.get(this.meterId);
      if (at !== undefined) {
        lateness.push(start - at);
        due.delete(this.meterId);
      }
      try {
        return await super.alarm(info);
      } finally {
        counts.objectWallMs += Date.now() - start;
        drain(this.meterId);
      }
    }
  };
}
