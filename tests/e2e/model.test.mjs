// The deployment model (bench/model.mjs, issue 46): pure, so tested here
// without a server. The bench's scale pass checks it against counts taken
// on workerd; this pins what it computes from given profiles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DESIGNS, INDEX_SHARDS, classOf, predictTotals, simulate } from '../../bench/model.mjs';

const deployment = { regions: ['enam', 'weur', 'apac'], ratePerRegion: 1000, lifetimeSeconds: 30, capacity: 1000 };

test('object names map to their classes', () => {
  assert.equal(classOf('hub'), 'hub');
  assert.equal(classOf('hub:3'), 'hub');
  assert.equal(classOf('calls:7'), 'calls');
  assert.equal(classOf('calls:weur3'), 'calls');
  assert.equal(classOf(`task:${'a'.repeat(32)}`), 'task');
  assert.equal(classOf('index:12'), 'index');
  assert.equal(classOf('meter:abcd'), 'meter');
});

test('the model is deterministic', () => {
  const p = { calls: 3, index: 2, task: 4 };
  assert.deepEqual(simulate(p, DESIGNS.after(10), deployment), simulate(p, DESIGNS.after(10), deployment));
});

test('one shared object takes every call: it saturates at capacity over its requests per call', () => {
  // Before issue 46, every task's changes went to the one hub: 3 a task.
  const r = simulate({ hub: 3, task: 4 }, DESIGNS.before, deployment);
  assert.equal(r.hottest.name, 'hub:0');
  assert.equal(r.hottest.perSecond, 3 * 3000);
  assert.equal(Math.round(r.saturatesAt.rate), Math.round(1000 / 3));
});

test('sharded objects share the load, the busiest above the mean', () => {
  const r = simulate({ index: 3, task: 4 }, DESIGNS.after(10), deployment);
  const mean = (3 * 3000) / INDEX_SHARDS;
  assert.ok(r.hottest.name.startsWith('index:'), r.hottest.name);
  assert.ok(r.hottest.perSecond > mean && r.hottest.perSecond < 3 * mean, `${r.hottest.perSecond} vs ${mean}`);
  // Call shards are per region: a region's calls never reach another's.
  const d = simulate({ calls: 3 }, DESIGNS.after(4), deployment);
  assert.equal(d.objects, 12);
});

test('a call\'s own object never saturates with the rate', () => {
  const r = simulate({ task: 6 }, DESIGNS.after(10), deployment);
  assert.equal(r.saturatesAt, null);
  assert.equal(r.hottest.perSecond, 6 / 30);
});

test('predicted totals add the profiles up by the mix', () => {
  assert.deepEqual(predictTotals({ a: { calls: 3 }, b: { index: 2, calls: 1 } }, { a: 2, b: 5 }), { calls: 11, index: 10 });
});
