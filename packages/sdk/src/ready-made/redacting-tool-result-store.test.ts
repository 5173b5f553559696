// Issue 14, item 3: an offloaded tool result is a place a value is written (a file here), and
// createRedactingToolResultStore redacts what goes there. A real run, the real file-system store.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineAgent, defineTool, hookToJSON, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger } from '../index.js';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createScriptedModel } from '../testing/index.js';
import { createRedactingToolResultStore } from './redaction.js';
import { AlwaysOffload, createReadOffloadedResultTool, createToolResultOffloadHook, FileSystemToolResultStore, type ToolResultStore } from './tool-result-offload.js';

const SECRET = 'sk-live0123456789abcdefghijklmnopqrstuv';

/** Every file under `dir`, as text. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(await readFile(join(entry.parentPath, entry.name), 'utf8'));
  }
  return out;
}

describe('createRedactingToolResultStore (issue 14, item 3: offloaded results)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'helix-redact-offload-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function runWith(store: ToolResultStore) {
    // The secret sits past the 200-character preview that goes into the conversation.
    const page = `${'lorem ipsum '.repeat(50)}\nconfig: ${SECRET}`;
    const fetchPage = defineTool({ name: 'fetch_page', description: 'Fetch a page', inputSchema: z.object({ url: z.string() }), execute: async () => page });
    const reader = createReadOffloadedResultTool(store);
    let readBack: unknown;
    const agent = defineAgent({
      name: 'reader',
      tools: [fetchPage, reader],
      llmConfig: {
        model: createScriptedModel([
          { toolCalls: [{ name: 'fetch_page', args: { url: 'https://example.com' } }] },
          (options) => {
            // The model reads the offloaded result back through its reference.
            const prompt = JSON.stringify(options.prompt);
            const ref = /offloaded to '([^']+)'/.exec(prompt.replace(/\\'/g, "'"))?.[1];
            return { toolCalls: [{ name: reader.name, args: { ref: ref ?? 'missing' } }] };
          },
          (options) => {
            readBack = JSON.stringify(options.prompt);
            return { text: 'Read it.' };
          },
        ]),
      },
    });
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const offload = createToolResultOffloadHook({ store, policies: { fetch_page: AlwaysOffload } });
    const result = await (await executor.execute(agent, 'Summarize example.com', { hookManager: createHookManager(offload) })).result();
    return { result, readBack: String(readBack), offload };
  }

  it('what the offload hook writes to the files is redacted; the reference still works and reading it back gives the redacted text', async () => {
    const { result, readBack } = await runWith(createRedactingToolResultStore(new FileSystemToolResultStore({ dir })));
    expect(result.status).toBe('completed');
    const files = await filesUnder(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).not.toContain(SECRET);
    expect(files[0]).toContain('[REDACTED]');
    expect(files[0]).toContain('lorem ipsum');
    // The read-back tool found the result and gave the model the redacted text.
    expect(readBack).toContain('config: [REDACTED]');
    expect(readBack).not.toContain(SECRET);
  });

  it('without the wrapper the file holds the secret (the case the wrapper exists for)', async () => {
    const { result } = await runWith(new FileSystemToolResultStore({ dir }));
    expect(result.status).toBe('completed');
    expect((await filesUnder(dir)).join('\n')).toContain(SECRET);
  });

  it('a hook over the wrapper cannot be serialized (a rebuilt hook would lose the redaction)', async () => {
    const { offload } = await runWith(createRedactingToolResultStore(new FileSystemToolResultStore({ dir })));
    expect(() => hookToJSON(offload)).toThrow();
  });
});
