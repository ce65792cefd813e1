// The server a suite runs against: `wrangler dev` (what a user runs), or a
// plain `workerd serve` of the deploy bundle (requests as Cloudflare
// delivers them), picked by E2E_VIA. A suite that must hold both ways has a
// twin file that sets E2E_VIA=workerd (see via-workerd.mjs) and imports it.
import { startWrangler } from './wrangler.mjs';
import { startWorkerd } from './workerd.mjs';

/** `wrangler` or `workerd`: where this process's suites send requests. */
export const VIA = process.env.E2E_VIA === 'workerd' ? 'workerd' : 'wrangler';

/** Starts the server this process's suites use (see startWrangler for opts). */
export function startServer(opts = {}) {
  return VIA === 'workerd' ? startWorkerd(opts) : startWrangler(opts);
}
