#!/usr/bin/env node
// The `helix` launcher. It runs the CLI's TypeScript sources through tsx when they are present (inside
// the repo, no build needed) and the built dist/ otherwise. tsx is registered either way, because a
// project's agents/ and hooks/ are TypeScript too.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { fileURLToPath, URL } from 'node:url';

const source = new URL('../src/main.ts', import.meta.url);
const fromSource = existsSync(fileURLToPath(source));
// Resolution help (see resolve-hooks.mjs): the helix-source condition when running from source, and
// this package's own dependencies for projects that have no node_modules of their own.
register('./resolve-hooks.mjs', import.meta.url, { data: { fallbackParent: import.meta.url, sourceCondition: fromSource } });
const { register: registerTsx } = await import('tsx/esm/api');
registerTsx();
await import(fromSource ? source.href : new URL('../dist/main.js', import.meta.url).href);
