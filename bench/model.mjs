// A model of a deployment (issue 46): which Durable Object saturates
// first, and at what rate of new calls. Deterministic (a seeded generator):
// the same inputs print the same report.
//
// Inputs:
// - a wire's profile: the requests one call makes to each class of object,
//   as counted on workerd (bench/scale.mjs): `calls` (a call shard),
//   `index` (an index shard), `hub` (a listen hub), `meter`, and the
//   objects of one call alone (`task`, `session`, `call`);
// - a design: how many objects of each shared class there are and how a
//   call picks one (`design.shards`), where the hub's requests come from;
// - a deployment: new calls per second in each region, how long a call
//   lives (its pauses), the capacity of one object (requests per second;
//   Cloudflare's guidance is of the order of a thousand simple requests).
//
// A second of arrivals is simulated: each call goes to its shards as the
// code picks them (a random call shard of its region, the index shard its
// handle hashes to: both uniform, drawn here from the seeded generator),
// and each object's requests in that second are added up. An object of one
// call alone receives that call's requests over the call's life.

import { prng } from '../tests/e2e/prng.mjs';

/** The index shards (`INDEX_SHARDS` in src/host/announce.rs). */
export const INDEX_SHARDS = 128;

/** The classes of object, from a name (`calls:eu:3`, `task:<id>`, `hub` …). */
export function classOf(name) {
  if (name === 'hub' || name.startsWith('hub:')) return 'hub';
  const prefix = name.split(':')[0];
  return { calls: 'calls', call: 'call', task: 'task', session: 'session', index: 'index', meter: 'meter' }[prefix] ?? 'other';
}

/** The classes of object one call has alone (never shared with another call). */
export const OWN = new Set(['task', 'session', 'call']);

/**
 * The two designs. `shards(region)`: how many objects of a shared class a
 * call of `region` can land in, and whether they are the region's own
 * (`perRegion`) or the deployment's.
 */
export const DESIGNS = {
  // Before issue 46: 16 call shards for the whole deployment, placed where
  // first reached; one hub that also kept the operator's index (every
  // task change and every session's opening and end went to it).
  before: {
    name: 'before (one hub and index, 16 call shards)',
    shards: { calls: { count: 16, perRegion: false }, index: { count: 1, perRegion: false, as: 'hub' }, hub: { count: 1, perRegion: false } },
  },
  // Issue 46: call shards per region, the index in INDEX_SHARDS (128,
  // src/host/announce.rs) shards by handle, a task's changes only to the
  // hubs whose streams named it.
  after: (callShardsPerRegion) => ({
    name: `after (${callShardsPerRegion} call shards per region, ${INDEX_SHARDS} index shards, hubs only for listeners)`,
    shards: { calls: { count: callShardsPerRegion, perRegion: true }, index: { count: INDEX_SHARDS, perRegion: false }, hub: { count: 1, perRegion: false } },
  }),
};

/**
 * One wire under one design and deployment: each object's requests per
 * second (the shared ones simulated over one second of arrivals), the
 * hottest, and the rate where it reaches `capacity` (and half of it).
 *
 * `profile`: requests per call by class. `deployment`: { regions: [names],
 * ratePerRegion, lifetimeSeconds, capacity, seed }.
 */
export function simulate(profile, design, deployment) {
  const { regions, ratePerRegion, lifetimeSeconds, capacity, seed = 46 } = deployment;
  const next = prng(seed);
  const load = new Map();
  const add = (name, n) => load.set(name, (load.get(name) ?? 0) + n);
  for (const region of regions) {
    const calls = Math.round(ratePerRegion);
    for (let i = 0; i < calls; i++) {
      for (const [cls, perCall] of Object.entries(profile)) {
        if (!perCall || OWN.has(cls)) continue;
        const shard = design.shards[cls] ?? { count: 1, perRegion: false };
        const as = shard.as ?? cls;
        const n = Math.floor(next() * shard.count);
        add(shard.perRegion ? `${as}:${region}:${n}` : `${as}:${n}`, perCall);
      }
    }
  }
  // An object of one call alone: its requests over the call's life.
  const own = Object.entries(profile).filter(([cls, n]) => OWN.has(cls) && n > 0)
    .map(([cls, n]) => ({ name: `${cls} (one per call)`, perSecond: n / lifetimeSeconds }));
  const shared = [...load.entries()].map(([name, perSecond]) => ({ name, perSecond }));
  const objects = [...shared, ...own].sort((a, b) => b.perSecond - a.perSecond);
  const hottest = objects[0] ?? { name: 'none', perSecond: 0 };
  const total = regions.length * ratePerRegion;
  // Shared objects' load grows with the rate; one call's own does not.
  const hottestShared = shared.sort((a, b) => b.perSecond - a.perSecond)[0];
  const scale = hottestShared ? capacity / hottestShared.perSecond : Infinity;
  return {
    rate: total,
    hottest: { ...hottest, utilization: hottest.perSecond / capacity },
    objects: objects.length,
    saturatesAt: hottestShared ? { rate: total * scale, object: hottestShared.name } : null,
    halfAt: hottestShared ? total * scale * 0.5 : Infinity,
  };
}

/**
 * The requests each object receives over a measured run's calls, as the
 * model predicts them from the wires' profiles: per class, the sum over
 * the calls of their profile (what bench/scale.mjs checks against the
 * counts of a mixed run).
 */
export function predictTotals(profiles, mix) {
  const totals = {};
  for (const [wire, count] of Object.entries(mix)) {
    for (const [cls, perCall] of Object.entries(profiles[wire] ?? {})) {
      totals[cls] = (totals[cls] ?? 0) + perCall * count;
    }
  }
  return totals;
}
