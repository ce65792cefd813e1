// Drives the `durable-mcp` CLI as a person at a terminal would: plays the
// user in "the browser" whenever it prints an authorization URL (then loads
// the loopback callback it was sent back to, as the browser would), and
// answers its questions when they appear on stderr.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const TARGET = process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target');
// Built by `cargo test --workspace` (the client package has integration tests).
export const CLI = join(TARGET, 'debug', 'durable-mcp');

/** A fresh config directory (tokens go to <dir>/tokens). */
export function configDir() {
  return mkdtempSync(join(tmpdir(), 'dmcp-cli-'));
}

/** The grants kept in `dir`: [{file, mode, dirMode, grant}]. */
export function keptGrants(dir) {
  const tokens = join(dir, 'tokens');
  if (!existsSync(tokens)) return [];
  return readdirSync(tokens).filter((f) => f.endsWith('.json')).map((f) => ({
    file: join(tokens, f),
    mode: statSync(join(tokens, f)).mode & 0o777,
    dirMode: statSync(tokens).mode & 0o777,
    grant: JSON.parse(readFileSync(join(tokens, f), 'utf8')),
  }));
}

/**
 * Runs the CLI with `args`. `play(url)` plays the user at an authorization
 * URL and returns where the server sent the browser back (the CLI's
 * loopback callback), which is then loaded. `answers` are
 * `{ when: RegExp on stderr, after?: ms, line: string }`, written to stdin
 * (once each, in order) when their prompt shows.
 *
 * @returns {Promise<{status: number, stdout: string, stderr: string, signIns: number}>}
 */
export function runCli(args, { config, play, answers = [], timeout = 120_000 } = {}) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(CLI, args, {
      env: { ...process.env, DURABLE_MCP_CONFIG_DIR: config, DURABLE_MCP_NO_BROWSER: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let signIns = 0;
    let pending = [...answers];
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`CLI timed out: ${stderr}`)); }, timeout);
    const failures = [];
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => {
      stderr += d;
      // Whole lines only: a URL may arrive in two chunks.
      const urls = [...stderr.matchAll(/Sign in: open this URL in a browser\n\s+(\S+)\n/g)];
      for (const m of urls.slice(signIns)) {
        signIns += 1;
        (async () => {
          if (!play) throw new Error('the CLI asked for a sign-in this test does not expect');
          const back = await play(m[1]);
          // The browser loads the loopback redirect: the CLI has its code.
          const r = await fetch(back);
          await r.text();
        })().catch((e) => { failures.push(e); child.kill('SIGKILL'); });
      }
      while (pending.length && pending[0].when.test(stderr)) {
        const a = pending.shift();
        setTimeout(() => child.stdin.write(`${a.line}\n`), a.after ?? 0);
      }
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      if (failures.length) reject(failures[0]);
      else resolveRun({ status, stdout, stderr, signIns });
    });
  });
}
