#!/usr/bin/env bash
# The packages as a user gets them: builds every package (unless --no-build), packs each with `npm pack`,
# checks what the tarballs hold, installs them into a new application outside the workspace (the
# helix packages from the tarballs, third-party dependencies from the npm registry or cache), runs an
# agent there with plain `node` (ESM import and CommonJS require), runs the packed `helix` CLI, and
# type-checks a strict TypeScript file there without skipLibCheck.
#
#   scripts/pack-check.sh [--no-build] [--keep]
#
# --no-build packs the dist/ folders as they are (CI builds just before); --keep leaves the temporary
# folder for inspection. The temporary folder is under $PACK_CHECK_TMP (default: the system temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build=1
keep=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    *) echo "usage: scripts/pack-check.sh [--no-build] [--keep]" >&2; exit 64 ;;
  esac
done

packages=(sdk store-memory llm-vercel store-sqlite store-postgres tracing-otel tracing-langfuse runtime-dbos mcp cli server)
started=$(date +%s)
step() { echo "-- pack-check: $* ($(($(date +%s) - started)) s)"; }

work=$(mktemp -d "${PACK_CHECK_TMP:-${TMPDIR:-/tmp}}/helix-pack-check-XXXXXX")
if [ "$keep" = 1 ]; then trap 'echo "pack-check: kept $work"' EXIT; else trap 'rm -rf "$work"' EXIT; fi

if [ "$build" = 1 ]; then
  step "clean build"
  for p in "${packages[@]}"; do rm -rf "packages/$p/dist"; done
  npm run build >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
fi

step "npm pack"
mkdir -p "$work/tarballs"
npm pack --silent $(printf -- '--workspace packages/%s ' "${packages[@]}") --pack-destination "$work/tarballs" >/dev/null

step "tarball contents"
fail=0
for tarball in "$work"/tarballs/*.tgz; do
  listing=$(tar -tzf "$tarball")
  name=$(basename "$tarball")
  for required in package/package.json package/README.md package/LICENSE package/dist/index.js package/dist/index.d.ts; do
    grep -qx "$required" <<<"$listing" || { echo "pack-check: $name lacks ${required#package/}" >&2; fail=1; }
  done
  if grep -qE '\.map$' <<<"$listing"; then echo "pack-check: $name ships source maps of sources it does not ship" >&2; fail=1; fi
  if grep -qE '(\.test\.|__tests__/)' <<<"$listing"; then echo "pack-check: $name ships tests" >&2; fail=1; fi
done
[ "$fail" = 0 ]

step "a new application"
app="$work/app"
mkdir -p "$app"
tgz() { ls "$work"/tarballs/helix-agents-"$1"-*.tgz; }
# The application depends on every helix package through its tarball; their dependencies on each
# other (exact 0.1.0) are satisfied by those, so nothing helix comes from the registry.
node - "$app" "${packages[@]}" <<'EOF'
const { writeFileSync, readdirSync } = require('node:fs');
const { join } = require('node:path');
const [app, ...packages] = process.argv.slice(2);
const tarballs = join(app, '..', 'tarballs');
const files = readdirSync(tarballs);
const dependencies = {};
for (const p of packages) {
  const file = files.find((f) => f.startsWith(`helix-agents-${p}-`) && /^\d/.test(f.slice(`helix-agents-${p}-`.length)));
  if (!file) throw new Error(`no tarball for ${p}`);
  dependencies[`@helix-agents/${p}`] = `file:../tarballs/${file}`;
}
// Third-party: what a user adds next to helix (the versions the workspace tests against). better-sqlite3
// is held at the workspace's version so its compiled addon can be reused (compiling it takes minutes).
const workspaceVersion = (name) => require(join(process.cwd(), 'node_modules', name, 'package.json')).version;
Object.assign(dependencies, { zod: '4.6.7', typescript: '5.9.3', '@types/node': '20.19.43', 'better-sqlite3': workspaceVersion('better-sqlite3'), '@modelcontextprotocol/sdk': workspaceVersion('@modelcontextprotocol/sdk') });
writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'helix-pack-check-app', private: true, type: 'module', dependencies }, null, 2));
EOF
cat >"$app/tsconfig.json" <<'EOF'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noUncheckedIndexedAccess": true,
    "exactOptionalPropertyTypes": true,
    "skipLibCheck": false,
    "noEmit": true,
    "types": ["node"]
  },
  "include": ["check.ts"]
}
EOF

# An agent with a tool, on the scripted model, the in-memory stores and the SQLite store.
cat >"$app/agent.js" <<'EOF'
import { defineAgent, defineTool, JSAgentExecutor, InMemoryStateStore, InMemoryStreamManager } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { connectMcpServer } from '@helix-agents/mcp';
import { z } from 'zod';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => ({ sum: a + b }),
});
const model = () => createScriptedModel([{ toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }] }, { text: 'The sum is 5.' }]);
const agent = (m) => defineAgent({ name: 'adder', systemPrompt: 'Add numbers.', llmConfig: { model: m }, tools: [add] });

const memory = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
const first = await (await memory.execute(agent(model()), 'What is 2 + 3?')).result();
if (first.status !== 'completed' || first.output !== 'The sum is 5.') throw new Error(`in memory: ${JSON.stringify(first)}`);

const stores = openSqliteStores({ path: process.argv[2] ?? ':memory:' });
const sqlite = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter());
const second = await (await sqlite.execute(agent(model()), 'What is 2 + 3?')).result();
await sqlite.close();
stores.close();
if (second.status !== 'completed' || second.output !== 'The sum is 5.') throw new Error(`on SQLite: ${JSON.stringify(second)}`);
console.log(`agent ok: ${first.output} (memory and SQLite)`);

// The same addition as a tool of an MCP server (mcp-server.js, over stdio).
const mcp = await connectMcpServer({ name: 'calc', transport: { command: process.execPath, args: [new URL('./mcp-server.js', import.meta.url).pathname] } });
const mcpAgent = defineAgent({ name: 'mcp-adder', systemPrompt: 'Add numbers.', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'calc__add', args: { a: 2, b: 3 } }] }, { text: 'The sum is 5.' }]) }, tools: await mcp.tools() });
const third = await (await memory.execute(mcpAgent, 'What is 2 + 3?')).result();
const row = (await memory.getSession(third.sessionId))?.messages.find((m) => m.role === 'tool');
await mcp.close();
if (third.status !== 'completed' || row?.content !== '5') throw new Error(`over MCP: ${JSON.stringify({ third, row })}`);
console.log('agent ok: an MCP tool over stdio');
EOF

# A small MCP server on the official SDK, for the agent's MCP tool.
cat >"$app/mcp-server.js" <<'EOF'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'calc', version: '1.0.0' });
server.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
await server.connect(new StdioServerTransport());
EOF

# The HTTP server: the UI message stream of one chat turn, over a real socket on 127.0.0.1.
cat >"$app/server.js" <<'EOF'
import { defineAgent, JSAgentExecutor, InMemoryStateStore, InMemoryStreamManager } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { bearerAuth, createHelixApp, serve } from '@helix-agents/server';

const runtime = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
const agent = defineAgent({ name: 'greeter', llmConfig: { model: createScriptedModel([{ text: 'Hello from the server.' }]) } });
const server = await serve(createHelixApp({ runtime, agents: [agent], auth: bearerAuth({ 'pack-check-token-000': 'u1' }) }), { port: 0 });
try {
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { authorization: 'Bearer pack-check-token-000', 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'chat-1', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] }] }),
  });
  const body = await response.text();
  if (response.headers.get('x-vercel-ai-ui-message-stream') !== 'v1' || !body.includes('Hello from the server.') || !body.trimEnd().endsWith('data: [DONE]')) throw new Error(`server: ${response.status} ${body}`);
  console.log('server ok: a UI message stream over HTTP');
} finally {
  await server.close();
  await runtime.close();
}
EOF

# require() of the ESM-only packages (Node 20.19+ loads ES modules synchronously through the "default" condition).
cat >"$app/require.cjs" <<'EOF'
const names = ['@helix-agents/sdk', '@helix-agents/sdk/testing', '@helix-agents/store-memory', '@helix-agents/llm-vercel', '@helix-agents/tracing-otel', '@helix-agents/mcp', '@helix-agents/server'];
for (const name of names) {
  const loaded = require(name);
  if (Object.keys(loaded).length === 0) throw new Error(`require('${name}') gave an empty module`);
}
if (typeof require('@helix-agents/sdk').defineAgent !== 'function') throw new Error('require: no defineAgent');
console.log(`require ok: ${names.join(', ')}`);
EOF

# A strict TypeScript file over every package's public entry points.
cat >"$app/check.ts" <<'EOF'
import { defineAgent, defineTool, JSAgentExecutor, InMemoryStateStore, InMemoryStreamManager, type AgentResult } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStepObject } from '@helix-agents/sdk/testing';
import type { StateStore } from '@helix-agents/sdk/store';
import { defineHook } from '@helix-agents/sdk/hooks';
import { createToolGuard } from '@helix-agents/sdk/ready-made';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { InMemoryUsageStore } from '@helix-agents/store-memory';
import { openSqliteStores, type SqliteStores } from '@helix-agents/store-sqlite';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { createOtelHooks } from '@helix-agents/tracing-otel';
import { createLangfuseHooks } from '@helix-agents/tracing-langfuse';
import { runCli, type CliIO } from '@helix-agents/cli';
import { DBOSAgentExecutor, launchDBOSWorker, type DBOSWorkerOptions } from '@helix-agents/runtime-dbos';
import { connectMcpServer, MCP_ERROR_CODES, type McpConnection, type McpToolsOptions } from '@helix-agents/mcp';
import { bearerAuth, createHelixApp, serve, type HelixAppOptions } from '@helix-agents/server';
import { z } from 'zod';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => ({ sum: a + b }),
});
const steps: ScriptedStepObject[] = [{ toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }] }, { text: 'The sum is 5.' }];
const agent = defineAgent({ name: 'adder', systemPrompt: 'Add numbers.', llmConfig: { model: createScriptedModel(steps) }, tools: [add] });
const store: StateStore = new InMemoryStateStore();
const executor = new JSAgentExecutor(store, new InMemoryStreamManager(), new VercelAIAdapter());
const result: Promise<AgentResult> = executor.execute(agent, 'What is 2 + 3?', { usageStore: new InMemoryUsageStore() }).then((h) => h.result());
const sqlite: (path: string) => SqliteStores = (path) => openSqliteStores({ path });
const hook = defineHook({ events: { 'turn.completed': (event) => void event.data.result } });
const workerOptions: DBOSWorkerOptions = { systemDatabaseUrl: 'postgres://127.0.0.1/dbos_sys', executorId: 'w1', applicationVersion: 'v1' };
const onDBOS = (stores: SqliteStores): DBOSAgentExecutor => new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { agents: [agent] });
const mcpOptions: McpToolsOptions = { include: ['add'], sideEffects: (tool) => tool.annotations?.readOnlyHint !== true, timeoutMs: 5_000 };
const mcpTools = (url: string): Promise<McpConnection> => connectMcpServer({ name: 'remote', transport: { url, headers: { authorization: 'Bearer x' } } });
const mcpAgent = (connection: McpConnection) => connection.tools(mcpOptions).then((tools) => defineAgent({ name: 'mcp', llmConfig: { model: createScriptedModel(steps) }, tools }));
const mcpCodes: string[] = Object.keys(MCP_ERROR_CODES);
const app = createHelixApp({ runtime: executor, agents: [agent], auth: bearerAuth({ 'a-token-of-16-chars': 'u1' }) });
const served: Promise<{ url: string }> = serve(app, { port: 0 });
export { result, sqlite, hook, createToolGuard, openPostgresStores, createOtelHooks, createLangfuseHooks, runCli, workerOptions, onDBOS, launchDBOSWorker, mcpTools, mcpAgent, mcpCodes, served };
export type { CliIO, HelixAppOptions };
EOF

step "npm install (helix from the tarballs)"
(cd "$app" && npm install --no-audit --no-fund --prefer-offline --ignore-scripts --loglevel=error >"$work/install.log" 2>&1) || { cat "$work/install.log"; exit 1; }
# Install scripts: better-sqlite3's addon is the workspace's (same version, same machine) when it has
# one, else it is built; the others run as npm would run them.
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
if [ -f "$addon" ]; then
  mkdir -p "$app/$(dirname "$addon")" && cp "$addon" "$app/$addon"
else
  (cd "$app" && npm rebuild better-sqlite3 --loglevel=error >>"$work/install.log" 2>&1) || { cat "$work/install.log"; exit 1; }
fi
others=$(cd "$app" && node -e "const l=require('./package-lock.json');console.log(Object.entries(l.packages).filter(([k,v])=>v.hasInstallScript&&k!=='node_modules/better-sqlite3').map(([k])=>k.replace(/^.*node_modules\//,'')).join(' '))")
if [ -n "$others" ]; then (cd "$app" && npm rebuild $others --loglevel=error >>"$work/install.log" 2>&1) || { cat "$work/install.log"; exit 1; }; fi
# Nothing helix may come from anywhere but the tarballs.
for p in "${packages[@]}"; do
  resolved=$(node -e "const l=require('$app/package-lock.json');const e=l.packages['node_modules/@helix-agents/$p'];console.log(e&&e.resolved||'')")
  case "$resolved" in file:*) ;; *) echo "pack-check: @helix-agents/$p resolved to '$resolved', not its tarball" >&2; exit 1 ;; esac
done

step "node agent.js"
(cd "$app" && node agent.js "$work/agent.db")
step "node server.js"
(cd "$app" && node server.js)
step "node require.cjs"
(cd "$app" && node require.cjs)
step "the packed helix CLI"
(cd "$app" && npx --no-install helix --version >/dev/null && npx --no-install helix --help >/dev/null)
step "tsc --strict, no skipLibCheck"
(cd "$app" && npx --no-install tsc -p tsconfig.json)

# helix init from the packed CLI: the project links the installed helix packages (file:) and installs.
step "helix init from the packed CLI, npm install there, helix run"
(cd "$work" && "$app/node_modules/.bin/helix" init bot >"$work/init.log") || { cat "$work/init.log"; exit 1; }
grep -q 'links them (file:)' "$work/init.log" || { cat "$work/init.log"; echo "pack-check: helix init did not link the local packages" >&2; exit 1; }
(cd "$work/bot" && npm install --no-audit --no-fund --prefer-offline --ignore-scripts --loglevel=error >"$work/bot-install.log" 2>&1) || { cat "$work/bot-install.log"; exit 1; }
(cd "$work/bot" && env -u OPENAI_API_KEY -u OPENAI_BASE_URL npx --no-install helix run --dir . --plain --message "What time is it?" >"$work/bot-run.log" 2>&1) || { cat "$work/bot-run.log"; exit 1; }
grep -q 'You said: "What time is it?"' "$work/bot-run.log" || { cat "$work/bot-run.log"; exit 1; }
(cd "$work/bot" && npx --no-install helix sessions --dir . | grep -q ' assistant  1 run  completed ') || { echo "pack-check: helix sessions does not list the run" >&2; exit 1; }
(cd "$work/bot" && npm run --silent typecheck) || { echo "pack-check: the scaffolded project does not type-check" >&2; exit 1; }
step "ok"
