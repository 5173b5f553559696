// `helix init` scaffolds a project that installs from where the CLI runs (issue 15, item 3): the helix
// packages are not on the registry, so its package.json links them (file:) to the CLI's own copies.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { localHelixPackages, scaffoldFiles } from './scaffold.js';

const root = mkdtempSync(join(tmpdir(), 'helix-scaffold-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function io() {
  const out: string[] = [];
  return { stdout: () => out.join(''), io: { stdout: { write: (t: string) => void out.push(t) }, stderr: { write: () => undefined }, env: {} } };
}

interface Manifest {
  readonly name?: string;
  readonly dependencies: Record<string, string>;
}

describe('helix init: dependencies that install', () => {
  it('links @helix-agents/cli and @helix-agents/sdk to the packages the CLI runs from, and says so', async () => {
    const r = io();
    expect(await runCli(['init', join(root, 'bot')], r.io)).toBe(0);
    const manifest = JSON.parse(readFileSync(join(root, 'bot', 'package.json'), 'utf8')) as Manifest;
    const cli = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
    expect(manifest.dependencies['@helix-agents/cli']).toBe(`file:${cli}`);
    for (const name of ['@helix-agents/cli', '@helix-agents/sdk']) {
      const spec = manifest.dependencies[name] ?? '';
      expect(spec).toMatch(/^file:\//);
      const folder = spec.slice('file:'.length);
      expect((JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as Manifest).name).toBe(name);
    }
    expect(r.stdout()).toContain('The helix packages are not on the npm registry yet: package.json links them (file:)');
    const local = localHelixPackages();
    expect(local.kind).toBe('local');
    if (local.kind === 'local') expect(r.stdout()).toContain(`  @helix-agents/sdk -> ${local.folders['@helix-agents/sdk']}\n`);
    expect(r.stdout()).toContain('npm install && npx helix run');
    // The project's own model lives next to the agent; the README documents local servers.
    expect(existsSync(join(root, 'bot', 'model.ts'))).toBe(true);
    expect(readFileSync(join(root, 'bot', 'README.md'), 'utf8')).toContain('createOpenAI({ baseURL }).chat(id)');
  });

  it('--registry <range> depends on published versions instead', async () => {
    const r = io();
    expect(await runCli(['init', join(root, 'published'), '--registry', '^0.2.0'], r.io)).toBe(0);
    const manifest = JSON.parse(readFileSync(join(root, 'published', 'package.json'), 'utf8')) as Manifest;
    expect(manifest.dependencies['@helix-agents/sdk']).toBe('^0.2.0');
    expect(manifest.dependencies['@helix-agents/cli']).toBe('^0.2.0');
    expect(r.stdout()).toContain('The helix packages come from the npm registry (^0.2.0).');
    expect(JSON.parse(scaffoldFiles('x', { kind: 'registry', range: '1.0.0' })['package.json'] ?? '{}')).toMatchObject({ dependencies: { '@helix-agents/sdk': '1.0.0' } });
  });
});
