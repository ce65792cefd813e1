// The pages of the browser test: each client's entry bundled by esbuild
// for the browser, and a tiny static server on 127.0.0.1 that serves them
// (one server per origin).
import { createServer } from 'node:http';
import { join } from 'node:path';
import { build } from 'esbuild';

/** Bundles `tests/e2e/browser/<name>.mjs` for each name: `{name: js}`. */
export async function bundle(names) {
  const out = {};
  for (const name of names) {
    const r = await build({
      entryPoints: [join(import.meta.dirname, `${name}.mjs`)],
      bundle: true,
      format: 'iife',
      platform: 'browser', // the clients' browser builds (v2's `browser` _shims)
      target: 'chrome120',
      write: false,
      logLevel: 'silent',
    });
    out[name] = r.outputFiles[0].text;
  }
  return out;
}

/** The page of a client: nothing but its bundle. */
function page(name) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>durable-mcp browser e2e (${name})</title></head>
<body><p id="client">${name}</p><script src="/${name}.js"></script></body></html>`;
}

/**
 * Serves `/<name>.html` and `/<name>.js` for each bundle on 127.0.0.1 at a
 * free port. Resolves with `{origin, close()}`; `requests` lists what it
 * served.
 */
export async function serveStatic(bundles) {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const m = /^\/([a-z0-9-]+)\.(html|js)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m || !(m[1] in bundles)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const [, name, ext] = m;
    res.writeHead(200, {
      'content-type': ext === 'html' ? 'text/html; charset=utf-8' : 'text/javascript; charset=utf-8',
      'cache-control': 'no-store',
    }).end(ext === 'html' ? page(name) : bundles[name]);
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}
