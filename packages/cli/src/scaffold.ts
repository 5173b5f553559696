import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CliError } from './errors.js';

const AGENT = `import { openai } from '@ai-sdk/openai';
import { defineAgent } from '@helix-agents/sdk';
import { clockTool } from '../tools/clock.js';

/**
 * The example agent. \`helix run\` picks the model at run time (the scripted model, or OpenAI when
 * OPENAI_API_KEY is set); \`helix run --model agent\` uses the one below.
 */
export default defineAgent({
  name: 'assistant',
  description: 'A concise assistant that can tell the time.',
  systemPrompt: 'You are a concise, helpful assistant. Use the clock tool for anything about the current date or time.',
  llmConfig: { model: openai(process.env['OPENAI_MODEL'] ?? 'gpt-4o-mini') },
  tools: [clockTool],
});
`;

const SCRIPT = `[
  {
    "toolCalls": [{ "name": "clock", "args": { "timeZone": "UTC" } }],
    "usage": { "inputTokens": 120, "outputTokens": 18 }
  },
  {
    "text": "I looked at the clock (see the tool result above). You said: \\"{{message}}\\" - this reply comes from agents/assistant.script.json; set OPENAI_API_KEY for a real model.",
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

function packageJson(name: string): string {
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
      },
      dependencies: { '@ai-sdk/openai': '^3.0.141', '@helix-agents/cli': '^0.1.0', '@helix-agents/sdk': '^0.1.0', zod: '^4.6.7' },
      devDependencies: { '@types/node': '^20.19.43', vitest: '^4.1.12' },
    },
    null,
    2,
  )}\n`;
}

const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
    include: ['agents', 'hooks', 'tools', 'helix.config.ts'],
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

\`helix run\` keeps sessions, hook kv and files in \`.helix/helix.db\`. Set OPENAI_API_KEY (or OPENAI_BASE_URL and
OPENAI_MODEL for an OpenAI-compatible server) to run on a real model instead of the script.
`;

/** The files `helix init` writes, by path relative to the project folder. */
export function scaffoldFiles(projectName: string): Readonly<Record<string, string>> {
  return {
    'package.json': packageJson(projectName),
    'tsconfig.json': TSCONFIG,
    '.gitignore': '.helix/\nnode_modules/\n',
    'README.md': README,
    'agents/assistant.ts': AGENT,
    'agents/assistant.script.json': SCRIPT,
    'tools/clock.ts': TOOL,
    'hooks/memory.ts': MEMORY_HOOK,
    'hooks/memory.test.ts': MEMORY_TEST,
  };
}

/**
 * Scaffolds a project in `folder` (created if needed): an example agent with a tool, its script,
 * and the journal hook. Refuses a folder that already has `agents/` or `hooks/` unless `force`;
 * with `force`, existing files are kept and only missing ones are written. Returns the files written.
 */
export function initProject(folder: string, options: { readonly force?: boolean } = {}): { readonly dir: string; readonly written: readonly string[] } {
  const dir = resolve(folder);
  if (!options.force && existsSync(dir) && ['agents', 'hooks'].some((name) => existsSync(join(dir, name)))) {
    const present = readdirSync(dir).filter((name) => name === 'agents' || name === 'hooks');
    throw new CliError('cli_init_conflict', `${dir} already has ${present.join(' and ')}/; nothing was written.`, 'Pick an empty folder, or pass --force to add only the missing files.');
  }
  const written: string[] = [];
  for (const [path, content] of Object.entries(scaffoldFiles(basename(dir)))) {
    const target = join(dir, path);
    if (existsSync(target)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    written.push(path);
  }
  return { dir, written };
}
