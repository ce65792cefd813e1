// What a server left under its persist directory, for the tests that prove
// no secret reaches storage or logs by reading every byte there.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every file under `dir` smaller than 64 MiB, as `[path, bytes as latin1
 * text]`. The server may still be running: SQLite removes an object's
 * `-shm` and `-wal` files when it closes the object, between the listing
 * and the read. A file gone meanwhile has nothing left to read (what its
 * WAL held is in the `.sqlite` file it was checkpointed into), so it is
 * skipped; any other error is thrown, and so is a missing `dir` (a test
 * reading the wrong directory must not pass on an empty one).
 */
export function everything(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      out.push(...everything(p));
      continue;
    }
    try {
      if (statSync(p).size < 64 << 20) out.push([p, readFileSync(p).toString('latin1')]);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  return out;
}
