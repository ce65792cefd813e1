// The Worker's entry (wrangler.toml's `main`): what worker-build's shim
// (build/index.js) exports, without the Proxy objects that shim makes for
// every request (and every call into an object), and with the same
// recovery from a trap in the wasm: the instance is reset before the next
// call, and an object made before the reset is made again. One thing more
// than the shim: a trap in an awaited step (a round of a call, which runs
// in a microtask) fails every request the dead instance was serving,
// where the shim leaves them waiting for ever. Should the shim change
// shape, its own exports are served as they are.
import { WorkerEntrypoint } from 'cloudflare:workers';
import Shimmed, { McpObject as ShimmedObject } from './build/index.js';

export * from './build/index.js';

// worker's own flags: a trap marks the state critical, and making an
// object through the shim's class resets the instance (and counts it).
const state = globalThis.__worker_init_state;
const RawObject = ShimmedObject?.prototype?.constructor;
const known =
  typeof state?.criticalError === 'boolean' &&
  typeof state?.instanceId === 'number' &&
  typeof Shimmed?.prototype?.fetch === 'function' &&
  typeof RawObject === 'function' &&
  RawObject !== ShimmedObject;

// Settles (rejects) when a trap ends the instance: every request it was
// serving waits on a future that will never be polled again.
let died;
let die;
function arm() {
  died = new Promise((_, reject) => {
    die = reject;
  });
  died.catch(() => {});
}
arm();

/** A trap (a panic, running out of memory) marks the instance for a reset. */
function trapped(e) {
  if (!(e instanceof WebAssembly.RuntimeError)) return;
  state.criticalError = true;
  const end = die;
  arm();
  end(e);
}

// A trap in a microtask reaches no caller: only this event sees it.
addEventListener('error', (e) => trapped(e.error));

function critical(e) {
  if (e instanceof WebAssembly.RuntimeError) console.error('Critical', e);
  trapped(e);
  throw e;
}

function guarded(call) {
  let out;
  try {
    out = call();
  } catch (e) {
    critical(e);
  }
  return out instanceof Promise ? Promise.race([out, died]).catch(critical) : out;
}

/** After a trap, resets the instance the way the shim does. */
function recover(ctx, env) {
  if (state.criticalError) Reflect.construct(Shimmed, [ctx, env]);
}

/** Each method of `from` on `to`, guarded; `target(self)` is what runs it. */
function wrap(from, to, target) {
  for (const name of Object.getOwnPropertyNames(from)) {
    const d = Object.getOwnPropertyDescriptor(from, name);
    if (name === 'constructor' || typeof d.value !== 'function') continue;
    to[name] = function (...args) {
      const self = target(this);
      return guarded(() => d.value.apply(self, args));
    };
  }
}

class Entry extends WorkerEntrypoint {}
// The handlers read `this.env` and `this.ctx`: the entrypoint itself.
wrap(Shimmed?.prototype ?? {}, Entry.prototype, (self) => {
  recover(self.ctx, self.env);
  return self;
});

class DurableObjectEntry {
  constructor(ctx, env) {
    recover(ctx, env);
    this.args = [ctx, env];
    this.instanceId = state.instanceId;
    try {
      this.inner = new RawObject(ctx, env);
    } catch (e) {
      state.criticalError = true;
      throw e;
    }
  }
}
wrap(RawObject?.prototype ?? {}, DurableObjectEntry.prototype, (self) => {
  recover(...self.args);
  if (self.instanceId !== state.instanceId) {
    self.inner = new RawObject(...self.args);
    self.instanceId = state.instanceId;
  }
  return self.inner;
});

export default known ? Entry : Shimmed;
export const McpObject = known ? DurableObjectEntry : ShimmedObject;
