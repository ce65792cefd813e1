// Cloudflare's published prices for what a call uses, on the Workers Paid
// plan, beyond its included amounts (marginal cost: the included monthly
// amounts and the $5 subscription are left out). Read on 2026-11-25 from
// https://developers.cloudflare.com/workers/platform/pricing/ (Workers,
// Standard usage model) and
// https://developers.cloudflare.com/durable-objects/platform/pricing/
// (compute; the SQLite storage backend: rows, and "each setAlarm is billed
// as a single row written"; key-value methods billed as rows too).

export const PRICES = {
  asOf: '2026-11-25',
  /** Workers: per request, per CPU millisecond. */
  workerRequest: 0.30 / 1e6,
  cpuMs: 0.02 / 1e6,
  /** Durable Objects: per request (HTTP, RPC session, alarm invocation). */
  objectRequest: 0.15 / 1e6,
  /** Durable Objects duration: per GB-second, billed at 128 MB while active. */
  gbSecond: 12.50 / 1e6,
  objectGb: 0.125,
  /** SQLite-backed storage: per row read, per row written. */
  rowRead: 0.001 / 1e6,
  rowWritten: 1.00 / 1e6,
};

/** Dollars per million calls of `units` (per call: requests, CPU ms, rows, the objects' wall ms). */
export function dollarsPerMillion(units) {
  const p = PRICES;
  const m = 1e6;
  const requests = units.workerRequests * p.workerRequest * m;
  const cpu = units.cpuMs * p.cpuMs * m;
  const objects = units.objectRequests * p.objectRequest * m;
  const rows = (units.rowsRead * p.rowRead + units.rowsWritten * p.rowWritten) * m;
  const duration = (units.objectMs / 1000) * p.objectGb * p.gbSecond * m;
  return { requests, cpu, objects, rows, duration, total: requests + cpu + objects + rows + duration };
}
