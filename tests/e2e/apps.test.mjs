// MCP Apps (SEP-1865) as a host sees them: the quickstart served by
// `wrangler dev` (the bundle `scripts/build.sh quickstart` made; built here
// when missing), read with the official TypeScript client, checked with the
// `@modelcontextprotocol/ext-apps` package's own schemas, and the deploy
// view rendered in a headless Chromium (Debian's, driven by puppeteer-core)
// with the host side of the postMessage protocol played by ext-apps' own
// AppBridge: the view's `ui/initialize` answered, then the call's input and
// its real result. The view must draw that result, with no console error
// and no request leaving the page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  McpUiInitializedNotificationSchema, McpUiInitializeRequestSchema,
  McpUiResourceMetaSchema, McpUiSizeChangedNotificationSchema, McpUiToolMetaSchema,
  McpUiToolResultNotificationSchema, RESOURCE_MIME_TYPE,
} from '@modelcontextprotocol/ext-apps';
import { AppBridge, getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import { EXTENSION_ID, getUiCapability } from '@modelcontextprotocol/ext-apps/server';
import puppeteer from 'puppeteer-core';
import { startWrangler } from './wrangler.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const QUICKSTART = join(ROOT, 'examples/quickstart');
const DEPLOY_VIEW = 'ui://quickstart/deploy.html';
// Debian's package (scripts/setup.sh installs it); puppeteer-core brings none.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEW_SIZE = { width: 560, height: 300 };

let server;
let client;
let browser;

before(async () => {
  if (!existsSync(join(QUICKSTART, 'build/worker/shim.mjs'))) {
    const built = spawnSync('bash', ['scripts/build.sh', 'quickstart'], { cwd: ROOT, encoding: 'utf8', timeout: 10 * 60_000 });
    assert.equal(built.status, 0, `building the quickstart failed:\n${built.stderr.slice(-4000)}`);
  }
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium) or set CHROMIUM_PATH`);
  [server, browser] = await Promise.all([
    startWrangler({
      prebuilt: QUICKSTART,
      // No TICKET_WEBHOOK: the ticket is made up locally.
      vars: { STATE_KEYS: 'dev:apps-e2e-key-0123456789abcdef', ALLOWED_HOSTS: 'localhost,127.0.0.1' },
    }),
    puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Root in CI: Chromium's own sandbox needs a user namespace it may not get.
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    }),
  ]);
  client = new Client(
    { name: 'apps-e2e-host', version: '0.0.1' },
    { capabilities: { elicitation: {}, sampling: {}, extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { target: 'staging' } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => (
    { role: 'assistant', model: 'e2e', content: { type: 'text', text: 'yes' }, stopReason: 'endTurn' }));
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
});

after(async () => {
  try { await client?.close(); } catch { /* already closed */ }
  await browser?.close();
  await server?.stop();
});

/** `schema` accepts `value` as it is: nothing refused, nothing stripped as unknown. */
function acceptsAsIs(schema, value, what) {
  const parsed = schema.safeParse(value);
  assert.ok(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)}`);
  assert.deepEqual(parsed.data, value, `${what}: every field is one the schema knows`);
}

test('the server declares the extension, the tool names its view, and the view is an mcp-app resource ext-apps accepts', async () => {
  // Declared as a client declares it, and read with ext-apps' own helper.
  const ui = getUiCapability(client.getServerCapabilities());
  assert.deepEqual(ui, { mimeTypes: [RESOURCE_MIME_TYPE] });

  const { tools } = await client.listTools();
  const deploy = tools.find((t) => t.name === 'deploy');
  assert.equal(getToolUiResourceUri(deploy), DEPLOY_VIEW, 'the host finds the view as AppBridge does');
  acceptsAsIs(McpUiToolMetaSchema, deploy._meta.ui, 'the tool _meta.ui');
  assert.equal(deploy._meta['ui/resourceUri'], DEPLOY_VIEW, 'the flat key older hosts read agrees');
  assert.equal(deploy.outputSchema.type, 'object');

  const { resources } = await client.listResources();
  const listed = resources.find((r) => r.uri === DEPLOY_VIEW);
  assert.equal(listed?.mimeType, RESOURCE_MIME_TYPE);
  acceptsAsIs(McpUiResourceMetaSchema, listed._meta.ui, 'the listed _meta.ui');

  const { contents } = await client.readResource({ uri: DEPLOY_VIEW });
  assert.equal(contents.length, 1);
  const [page] = contents;
  assert.equal(page.uri, DEPLOY_VIEW);
  assert.equal(page.mimeType, RESOURCE_MIME_TYPE);
  assert.match(page.text, /^<!doctype html>/i);
  acceptsAsIs(McpUiResourceMetaSchema, page._meta.ui, 'the read _meta.ui');
  assert.deepEqual(page._meta.ui, { prefersBorder: true });
  // Self-contained: nothing the page would load from elsewhere.
  assert.doesNotMatch(page.text, /<(script|link|img)[^>]+(src|href)=|@import|url\(/i);
});

/** The CSP a host puts on a view (the spec's construction; its restrictive default when none is declared). */
function hostCsp(csp) {
  if (!csp) {
    return "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
      + "img-src 'self' data:; media-src 'self' data:; connect-src 'none'";
  }
  const r = (csp.resourceDomains ?? []).join(' ');
  return [`default-src 'none'`, `script-src 'self' 'unsafe-inline' ${r}`, `style-src 'self' 'unsafe-inline' ${r}`,
    `connect-src 'self' ${(csp.connectDomains ?? []).join(' ')}`, `img-src 'self' data: ${r}`, `font-src 'self' ${r}`,
    `media-src 'self' data: ${r}`, `frame-src ${(csp.frameDomains ?? []).join(' ') || "'none'"}`, `object-src 'none'`,
    `base-uri ${(csp.baseUriDomains ?? []).join(' ') || "'self'"}`].join('; ');
}

/** The messages a view may send, each checked with ext-apps' schema for it. */
const FROM_VIEW = {
  'ui/initialize': McpUiInitializeRequestSchema,
  'ui/notifications/initialized': McpUiInitializedNotificationSchema,
  'ui/notifications/size-changed': McpUiSizeChangedNotificationSchema,
};

/**
 * The AppBridge's transport: the view's messages come up from the host page
 * (an exposed function), ours go down with the iframe's postMessage.
 */
class IframeTransport {
  constructor(page) {
    this.page = page;
    this.fromView = [];
  }

  async start() {}

  async send(message) {
    await this.page.evaluate((m) => document.getElementById('view').contentWindow.postMessage(m, '*'), message);
  }

  async close() {
    this.onclose?.();
  }

  receive(message) {
    this.fromView.push(message);
    this.onmessage?.(message);
  }
}

/** The share of a PNG's pixels that differ from its top-left one. */
async function ink(page, png) {
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.width;
    canvas.height = img.height;
    const g = canvas.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, img.width, img.height).data;
    let differ = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) differ++;
    }
    return differ / (d.length / 4);
  }, Buffer.from(png).toString('base64'));
}

test('a headless browser renders the deploy view from the call\'s real result, as a host hands it over', { timeout: 45_000 }, async (t) => {
  const args = { service: 'api' };
  const result = await client.callTool({ name: 'deploy', arguments: args });
  assert.equal(result.structuredContent.status, 'deployed', JSON.stringify(result));
  acceptsAsIs(McpUiToolResultNotificationSchema.shape.params, result, 'the result as tool-result params');
  const { contents: [view] } = await client.readResource({ uri: DEPLOY_VIEW });
  const { tools } = await client.listTools();
  const tool = tools.find((x) => x.name === 'deploy');

  const page = await browser.newPage();
  await page.setViewport({ width: VIEW_SIZE.width + 40, height: VIEW_SIZE.height + 40 });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console.error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Offline: a view may load nothing from anywhere.
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (/^(about|data):/.test(r.url())) return r.continue();
    problems.push(`request: ${r.url()}`);
    return r.abort();
  });

  const transport = new IframeTransport(page);
  await page.exposeFunction('fromView', (m) => transport.receive(m));
  const frame = `width:${VIEW_SIZE.width}px;height:${VIEW_SIZE.height}px;border:0;display:block;margin:20px`;
  await page.setContent(`<!doctype html><body style="margin:0;background:#fff">
    <iframe id="view" sandbox="allow-scripts" style="${frame}"></iframe>
    <script>
      addEventListener('message', (e) => {
        if (e.source === document.getElementById('view').contentWindow) window.fromView(e.data);
      });
    </script></body>`);
  const blank = await (await page.$('#view')).screenshot();

  const bridge = new AppBridge(client, { name: 'apps-e2e-host', version: '0.0.1' }, { serverTools: {}, serverResources: {} }, {
    hostContext: { theme: 'light', displayMode: 'inline', platform: 'web', toolInfo: { tool },
      containerDimensions: { width: VIEW_SIZE.width, maxHeight: VIEW_SIZE.height } },
  });
  const initialized = new Promise((ok) => { bridge.oninitialized = ok; });
  await bridge.connect(transport);
  // The page as the host's sandbox loads it: with the policy its metadata asks for.
  const csp = `<meta http-equiv="Content-Security-Policy" content="${hostCsp(view._meta?.ui?.csp)}">`;
  const html = view.text.replace(/<head>/i, (h) => `${h}${csp}`);
  assert.notEqual(html, view.text, 'the policy went in');
  await page.evaluate((h) => { document.getElementById('view').srcdoc = h; }, html);

  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  const viewFrame = page.frames().find((f) => f !== page.mainFrame());
  await viewFrame.waitForFunction(() => document.getElementById('status').dataset.status === 'deployed', { timeout: 10_000 });
  const shown = await viewFrame.evaluate(() => Object.fromEntries(
    ['status', 'service', 'target', 'ticket'].map((id) => [id, document.getElementById(id).textContent])));
  const { service, target, ticket } = result.structuredContent;
  assert.deepEqual(shown, { status: 'deployed', service, target, ticket });

  // What the view said, each message as ext-apps' schema for it has it.
  const methods = transport.fromView.map((m) => m.method);
  assert.deepEqual(methods.slice(0, 2), ['ui/initialize', 'ui/notifications/initialized']);
  for (const m of transport.fromView) {
    if (m.method === undefined) continue; // an answer to the host
    const schema = FROM_VIEW[m.method];
    assert.ok(schema, `the view sent ${m.method}, which this host does not expect`);
    const { jsonrpc, id, ...message } = m;
    acceptsAsIs(schema, message, m.method);
  }
  assert.equal(bridge.getAppVersion()?.name, 'quickstart-deploy-view');

  // Not blank: the view's pixels against the same frame before it loaded.
  const drawn = await (await page.$('#view')).screenshot();
  const shot = join(server.persistTo, 'deploy-view.png');
  writeFileSync(shot, drawn);
  t.diagnostic(`screenshot: ${shot}`);
  const [blankInk, drawnInk] = [await ink(page, blank), await ink(page, drawn)];
  assert.equal(blankInk, 0, 'the empty frame is blank');
  assert.ok(drawnInk > 0.01, `the view drew something (${(drawnInk * 100).toFixed(1)}% of its pixels)`);
  assert.deepEqual(problems, []);
  await bridge.teardownResource({ reason: 'test over' });
  await page.close();
});
