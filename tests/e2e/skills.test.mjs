// Skills (SEP-2640) as a host loads them: the fixtures worker's bundled
// skills served by `wrangler dev`, read with the official TypeScript
// client's SkillsClient (@modelcontextprotocol/client/ext/skills), which
// refuses an invalid entry and verifies every file it reads against the
// entry: listed, its size, its SHA-256 digest, and for a SKILL.md its
// frontmatter field by field. On the 2026-07-28 wire and on a 2025-11-25
// session.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { startWrangler } from './wrangler.mjs';
import { MODERN } from './modern.mjs';

const SKILLS_DIR = resolve(import.meta.dirname, '../fixtures-worker/skills');
const REFUNDS = 'skill://acme/billing/refunds/SKILL.md';
const PDF = 'skill://pdf-processing/SKILL.md';

let server;
const clients = [];

/** A SkillsClient over a client speaking `version` (a session for 2025-11-25). */
async function skillsClient(version) {
  const mode = version === MODERN ? { pin: MODERN } : 'legacy';
  const client = new Client(
    { name: 'skills-e2e-host', version: '0.0.1' },
    { capabilities: {}, versionNegotiation: { mode } },
  );
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return new SkillsClient(client);
}

before(async () => {
  server = await startWrangler();
});

after(async () => {
  for (const c of clients) {
    try { await c.close(); } catch { /* already closed */ }
  }
  await server?.stop();
});

for (const version of [MODERN, '2025-11-25']) {
  test(`${version}: the host lists the skills, and every entry is valid`, async () => {
    const skills = await skillsClient(version);
    assert.equal(skills.supported, true);
    assert.equal(skills.directoryRead, true);
    // list() throws on any invalid entry.
    const listing = await skills.list();
    assert.deepEqual(listing.invalid, []);
    assert.deepEqual(listing.skills.map((s) => s.uri), [REFUNDS, PDF]);
    if (version === MODERN) {
      assert.equal(typeof listing.ttlMs, 'number');
      assert.equal(listing.cacheScope, 'public');
    }
    const pdf = listing.skills[1];
    assert.deepEqual(pdf.frontmatter.metadata, { author: 'conformance', version: '1.0' });
    assert.equal(pdf.frontmatter['allowed-tools'], 'Read Bash(python:*)');
  });

  test(`${version}: every file reads back verified, as it is on disk`, async () => {
    const skills = await skillsClient(version);
    const { skills: entries } = await skills.list();
    let files = 0;
    for (const skill of entries) {
      for (const { uri } of skill.resources) {
        // read() checks the size, the digest and, for SKILL.md, the frontmatter.
        const file = await skills.read(skill, uri);
        assert.equal(file.verified, true, uri);
        const onDisk = readFileSync(join(SKILLS_DIR, uri.slice('skill://'.length)));
        assert.deepEqual(Buffer.from(file.bytes), onDisk, uri);
        files++;
      }
    }
    assert.equal(files, 7);
    const manifest = await skills.read(entries[1]);
    assert.deepEqual(manifest.frontmatter, entries[1].frontmatter);
    assert.match(manifest.body, /^\s*# PDF processing/);
    const png = await skills.read(entries[1], 'assets/pixel.png');
    assert.equal(png.mimeType, 'image/png');
    assert.equal(png.text, undefined, 'a binary file comes as a blob');
  });

  test(`${version}: skills/get answers a skill by its URI, and -32602 for none`, async () => {
    const skills = await skillsClient(version);
    const { skills: entries } = await skills.list();
    const { skill } = await skills.get(REFUNDS);
    assert.deepEqual(skill, entries[0]);
    await assert.rejects(skills.get('skill://acme/billing/chargebacks/SKILL.md'), (e) => {
      assert.equal(e.code, -32602, String(e));
      return true;
    });
  });

  test(`${version}: directories list their direct children`, async () => {
    const skills = await skillsClient(version);
    const root = await skills.readDirectory('skill://pdf-processing');
    assert.deepEqual(
      root.resources.map((r) => [r.uri, r.mimeType]),
      [
        ['skill://pdf-processing/SKILL.md', 'text/markdown'],
        ['skill://pdf-processing/assets', 'inode/directory'],
        ['skill://pdf-processing/references', 'inode/directory'],
        ['skill://pdf-processing/scripts', 'inode/directory'],
      ],
    );
    const examples = await skills.readDirectory('skill://acme/billing/refunds/examples');
    assert.deepEqual(examples.resources.map((r) => r.name), ['email.md', 'regional']);
    await assert.rejects(skills.readDirectory(PDF), (e) => {
      assert.equal(e.code, -32602, String(e));
      return true;
    });
  });
}
