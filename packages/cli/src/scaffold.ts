import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from './errors.js';

/** The helix packages a scaffolded project depends on. */
const HELIX_PACKAGES = ['@helix-agents/cli', '@helix-agents/sdk'] as const;

/** Where a scaffold's helix dependencies come from: `file:` links to local package folders, or registry ranges. */
export type HelixDependencySource = { readonly kind: 'local'; readonly folders: Readonly<Record<string, string>> } | { readonly kind: 'registry'; readonly range: string };

function nameOf(folder: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
}

/** The folder of package `name` as Node finds it from the file `from`: the enclosing package itself, or a node_modules folder above. */
function packageFolder(name: string, from: string): string | undefined {
  for (let dir = dirname(from); dir !== dirname(dir); dir = dirname(dir)) {
    if (nameOf(dir) === name) return dir;
    const candidate = join(dir, 'node_modules', ...name.split('/'));
    if (nameOf(candidate) === name) return realpathSync(candidate);
  }
  return undefined;
}

/**
 * The helix packages of the CLI that runs: its own folder and the SDK it loads (a workspace checkout, or an
 * application's node_modules where the tarballs were installed). The packages are not on the npm registry
 * yet, so a scaffold links to these (`file:`) and installs wherever the CLI runs.
 */
export function localHelixPackages(): HelixDependencySource {
  const here = fileURLToPath(import.meta.url);
  const folders: Record<string, string> = {};
  for (const name of HELIX_PACKAGES) {
    const folder = packageFolder(name, here);
    if (folder === undefined) throw new CliError('cli_init_conflict', `Cannot find ${name} next to the helix CLI (${here}).`, 'Pass --registry to depend on the published packages instead.');
    folders[name] = folder;
  }
  return { kind: 'local', folders };
}

const AGENT = `import { defineAgent } from '@helix-agents/sdk';
import { projectModel } from '../model.js';
import { clockTool } from '../tools/clock.js';

/**
 * The example agent. \`helix run\` runs it on the model below (see model.ts: a local OpenAI-compatible
 * server, OpenAI, or the script in agents/assistant.script.json); \`--model scripted\` or
 * \`--model openai\` overrides it for one run.
 */
export default defineAgent({
  name: 'assistant',
  description: 'A concise assistant that can tell the time.',
  systemPrompt: 'You are a concise, helpful assistant. Use the clock tool for anything about the current date or time.',
  llmConfig: { model: projectModel(new URL('./assistant.script.json', import.meta.url)) },
  tools: [clockTool],
});
`;

const MODEL = `import { readFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '@helix-agents/sdk/testing';

/**
 * The model of this project's agents:
 * - OPENAI_BASE_URL set: an OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio, ...). Local servers
 *   serve the chat API, not the Responses API that \`openai(id)\` calls, hence \`.chat(id)\`; no key is needed.
 * - OPENAI_API_KEY set: OpenAI.
 * - neither: the scripted model plays the script file, with {{message}} replaced by the user's message.
 * OPENAI_MODEL names the model (default gpt-4o-mini).
 */
export function projectModel(scriptFile: URL): LanguageModel {
  const modelId = process.env['OPENAI_MODEL'] ?? 'gpt-4o-mini';
  const baseURL = process.env['OPENAI_BASE_URL'];
  if (baseURL) return createOpenAI({ baseURL, apiKey: process.env['OPENAI_API_KEY'] ?? 'not-needed' }).chat(modelId);
  if (process.env['OPENAI_API_KEY']) return createOpenAI()(modelId);
  const script = JSON.parse(readFileSync(scriptFile, 'utf8')) as ScriptedStepObject[];
  const steps: ScriptedStep[] = script.map((step) => (call) => {
    const user = [...call.prompt].reverse().find((m) => m.role === 'user');
    const text = user?.role === 'user' ? user.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
    return JSON.parse(JSON.stringify(step).replaceAll('{{message}}', JSON.stringify(text).slice(1, -1))) as ScriptedStepObject;
  });
  return createScriptedModel(steps, { modelId: 'scripted' });
}
`;

const SCRIPT = `[
  {
    "toolCalls": [{ "name": "clock", "args": { "timeZone": "UTC" } }],
    "usage": { "inputTokens": 120, "outputTokens": 18 }
  },
  {
    "text": "I looked at the clock (see the tool result above). You said: \\"{{message}}\\" - this reply comes from agents/assistant.script.json; set OPENAI_API_KEY or OPENAI_BASE_URL for a real model.",
    "chunkDelayMs": 15,
    "usage": { "inputTokens": 160, "outputTokens": 42 }
  }
]
`;

const TOOL = `import { defineTool } from '@helix-agents/sdk';
import { z } from 'zod';

/** Tells the current date and time in a time zone. */
export const clockTool = defineTool({
  name: 'clock',
  description: 'The current date and time in an IANA time zone, e.g. "Europe/Paris".',
  inputSchema: z.object({ timeZone: z.string().default('UTC') }),
  execute: ({ timeZone }) => ({
    timeZone,
    now: new Date().toLocaleString('en-US', { timeZone, dateStyle: 'full', timeStyle: 'long' }),
  }),
});
`;

const MEMORY_HOOK = `import { defineHook } from '@helix-agents/sdk/hooks';

const JOURNAL = 'journal.md';

/**
 * The transcript journal: every session gets a journal.md in its durable files (ctx.host.files,
 * stored in .helix/helix.db), one entry per message, tool result and reply. It runs after each event
 * is recorded and never delays the model. Delete this file to opt out of the journal.
 */
export default defineHook({
  events: {
    async 'message.received'(event, ctx) {
      await ctx.host.files.append(JOURNAL, \`\\n## \${new Date(event.at).toISOString()}\\n\\n**user:** \${event.data.text}\\n\`);
    },
    async 'action.result'(event, ctx) {
      const output = JSON.stringify(event.data.output) ?? 'nothing';
      await ctx.host.files.append(JOURNAL, \`- \\\`\${event.data.toolName}\\\` \${event.data.isError ? 'failed' : 'returned'} \${output}\\n\`);
    },
    async 'turn.completed'(event, ctx) {
      const reply = typeof event.data.result === 'string' ? event.data.result : JSON.stringify(event.data.result);
      await ctx.host.files.append(JOURNAL, \`\\n**\${ctx.agent.name}:** \${reply}\\n\`);
      // kv is shared by every session of the agent: prefix per-session keys with the session id.
      const key = \`\${ctx.session.id}:turns\`;
      await ctx.host.kv.set(key, ((await ctx.host.kv.get<number>(key)) ?? 0) + 1);
    },
    async 'turn.failed'(event, ctx) {
      await ctx.host.files.append(JOURNAL, \`\\n_turn \${event.data.status ?? 'failed'}: \${event.data.message}_\\n\`);
    },
  },
});
`;

const MEMORY_TEST = `// Discovery skips *.test.ts, so a hook's unit test can live next to it (run it with vitest).
import { createSessionHookContext, InMemoryFileStore } from '@helix-agents/sdk/hooks';
import { describe, expect, it } from 'vitest';
import memory from './memory.js';

describe('the journal hook', () => {
  it('appends the reply to the session journal and counts turns', async () => {
    const files = new InMemoryFileStore();
    const ctx = createSessionHookContext({ session: { id: 's1' }, agentName: 'assistant', files });
    await memory.events['turn.completed']({ type: 'turn.completed', index: 7, sessionId: 's1', at: 0, data: { result: 'Hi!' } }, ctx);
    expect(await ctx.host.files.read('journal.md')).toContain('**assistant:** Hi!');
    expect(await ctx.host.kv.get('s1:turns')).toBe(1);
  });
});
`;

function packageJson(name: string, helix: HelixDependencySource): string {
  const safe = name.toLowerCase().replace(/[^a-z0-9-_.]/g, '-').replace(/^[._-]+/, '') || 'helix-project';
  return `${JSON.stringify(
    {
      name: safe,
      private: true,
      type: 'module',
      scripts: {
        validate: 'helix validate --dir .',
        info: 'helix info --dir .',
        start: 'helix run --dir . --message "What time is it?"',
        typecheck: 'tsc -p tsconfig.json',
      },
      dependencies: {
        '@ai-sdk/openai': '^3.0.141',
        ...Object.fromEntries(HELIX_PACKAGES.map((p) => [p, helix.kind === 'local' ? `file:${helix.folders[p]}` : helix.range])),
        zod: '^4.6.7',
      },
      devDependencies: { '@types/node': '^20.19.43', typescript: '^5.9.3', vitest: '^4.1.12' },
    },
    null,
    2,
  )}\n`;
}

const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
    include: ['agents', 'hooks', 'tools', 'model.ts', 'helix.config.ts'],
  },
  null,
  2,
)}\n`;

const README = `# A helix-agents project

- \`agents/assistant.ts\`: the agent (\`defineAgent\`), with \`agents/assistant.script.json\`, the replies of the scripted model.
- \`tools/clock.ts\`: a tool the agent uses.
- \`hooks/memory.ts\`: the journal hook (\`defineHook\`); delete it to opt out. Any module under \`hooks/\` is a hook named by its path.

\`\`\`sh
helix validate --dir .              # discovery errors and warnings
helix info --dir . --json           # agents and their hooks
helix run --dir . --message "What time is it?"
\`\`\`

\`helix run\` keeps sessions, hook kv and files in \`.helix/helix.db\` and runs the agent on its own model
(\`model.ts\`): with neither variable below set, the scripted model plays \`agents/assistant.script.json\`.

- OpenAI: \`OPENAI_API_KEY=... helix run --dir . --message "..."\`
- a local OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio), no key needed:
  \`OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_MODEL=my-model helix run --dir . --message "..."\`.
  In code that is \`createOpenAI({ baseURL }).chat(id)\`: local servers serve the chat API, not the Responses
  API that \`openai(id)\` calls (a 404 on /v1/responses).
- \`--model scripted\` or \`--model openai [--base-url URL]\` overrides the agent's model for one run.
`;

/** The files `helix init` writes, by path relative to the project folder. */
export function scaffoldFiles(projectName: string, helix: HelixDependencySource = { kind: 'registry', range: '^0.1.0' }): Readonly<Record<string, string>> {
  return {
    'package.json': packageJson(projectName, helix),
    'tsconfig.json': TSCONFIG,
    '.gitignore': '.helix/\nnode_modules/\n',
    'README.md': README,
    'model.ts': MODEL,
    'agents/assistant.ts': AGENT,
    'agents/assistant.script.json': SCRIPT,
    'tools/clock.ts': TOOL,
    'hooks/memory.ts': MEMORY_HOOK,
    'hooks/memory.test.ts': MEMORY_TEST,
  };
}

/**
 * Scaffolds a project in `folder` (created if needed). Its helix dependencies are `file:` links to the
 * packages the CLI runs from (see {@link localHelixPackages}), or `helix.range` from the registry: an example agent with a tool, its script,
 * and the journal hook. Refuses a folder that already has `agents/` or `hooks/` unless `force`;
 * with `force`, existing files are kept and only missing ones are written. Returns the files written.
 */
export function initProject(
  folder: string,
  options: { readonly force?: boolean; readonly helix?: HelixDependencySource } = {},
): { readonly dir: string; readonly written: readonly string[]; readonly helix: HelixDependencySource } {
  const dir = resolve(folder);
  if (!options.force && existsSync(dir) && ['agents', 'hooks'].some((name) => existsSync(join(dir, name)))) {
    const present = readdirSync(dir).filter((name) => name === 'agents' || name === 'hooks');
    throw new CliError('cli_init_conflict', `${dir} already has ${present.join(' and ')}/; nothing was written.`, 'Pick an empty folder, or pass --force to add only the missing files.');
  }
  const helix = options.helix ?? localHelixPackages();
  const written: string[] = [];
  for (const [path, content] of Object.entries(scaffoldFiles(basename(dir), helix))) {
    const target = join(dir, path);
    if (existsSync(target)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    written.push(path);
  }
  return { dir, written, helix };
}
