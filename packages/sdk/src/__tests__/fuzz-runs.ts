/**
 * Issue 14 item 12: the run fuzzer. Generated model replies (random tool names, valid and malformed JSON
 * arguments, random finish calls, provider errors) and generated hook behaviour (throw, hang past a
 * timeout, rewrite, block) under each error policy, with the invariants every run must keep. Shared by
 * `fuzz.test.ts` (npm test) and `fuzz-main.ts` (npm run fuzz); no vitest in here.
 */
import fc from 'fast-check';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  createHookManager,
  defineAgent,
  defineTool,
  guard,
  guardPolicy,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AfterToolPayload,
  type AgentHooks,
  type BeforeToolPayload,
  type HookErrorPolicy,
  type HookPoint,
  type Logger,
  type StreamChunk,
} from '../index.js';
import { createScriptedModel, type ScriptedStepObject } from '../testing/index.js';

export const TOOL_NAMES = ['increment', 'echo', 'boom', '__finish__'] as const;

/** One generated tool call: a known or random name, JSON-encoded args or raw argument text. */
export type FuzzCall = { readonly name: string; readonly args: unknown } | { readonly name: string; readonly raw: string };

/** One generated model reply. */
export type FuzzReply =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'calls'; readonly text: string; readonly calls: readonly FuzzCall[] }
  | { readonly kind: 'error'; readonly status: number };

/** What one generated hook handler does. */
export type FuzzBehaviour = 'none' | 'throw' | 'hang' | 'rewrite' | 'block' | 'reject';

export const FUZZ_POINTS = ['beforeLLMCall', 'afterLLMCall', 'beforeTool', 'afterTool', 'onAgentComplete'] as const satisfies readonly HookPoint[];
type FuzzPoint = (typeof FUZZ_POINTS)[number];

/** How errors are handled: one manager policy, the guard preset, or per-handler policies through guard(). */
export type FuzzPolicy =
  | { readonly kind: 'manager'; readonly onError: HookErrorPolicy | 'guardPolicy' }
  | { readonly kind: 'guard'; readonly perHandler: Readonly<Partial<Record<FuzzPoint, HookErrorPolicy>>> };

export interface FuzzCase {
  readonly replies: readonly FuzzReply[];
  readonly hooks: Readonly<Partial<Record<FuzzPoint, FuzzBehaviour>>>;
  readonly policy: FuzzPolicy;
  readonly structured: boolean;
  readonly maxSteps: number;
}

const jsonValue = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.string({ maxLength: 6 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 2 }),
);

const args = fc.oneof(
  fc.record({ by: fc.integer({ min: -2, max: 3 }) }),
  fc.record({ text: fc.string({ maxLength: 8 }) }),
  fc.record({ answer: fc.string({ maxLength: 8 }) }),
  fc.dictionary(fc.string({ maxLength: 4 }), jsonValue, { maxKeys: 3 }),
  jsonValue,
);

const rawArgs = fc.oneof(
  fc.constantFrom('', '{', '{"by": ', '{"by": 1', 'null', '[]', '"x"', '{"by": 1}}', '{"answer": "ok"', 'NaN', '{"by": 1e999}', '\u0000', '{"__proto__": {"by": 1}}'),
  fc.string({ maxLength: 10 }),
  args.map((a) => JSON.stringify(a)),
);

const toolName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...TOOL_NAMES) },
  { weight: 1, arbitrary: fc.constantFrom('', 'Increment', 'no_such_tool', '__proto__', 'constructor', 'a'.repeat(80)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

const call: fc.Arbitrary<FuzzCall> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ name: toolName, args }) },
  { weight: 1, arbitrary: fc.record({ name: toolName, raw: rawArgs }) },
);

const reply: fc.Arbitrary<FuzzReply> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.string({ maxLength: 8 }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('calls' as const), text: fc.string({ maxLength: 4 }), calls: fc.array(call, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('error' as const), status: fc.constantFrom(400, 401, 429, 500) }) },
);

const behaviour: fc.Arbitrary<FuzzBehaviour> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('none' as const) },
  { weight: 1, arbitrary: fc.constantFrom<FuzzBehaviour>('throw', 'hang', 'rewrite', 'block', 'reject') },
);

const policyName = fc.constantFrom<HookErrorPolicy>('fail-run', 'fail-closed', 'block-tool', 'fail-open');

const policy: fc.Arbitrary<FuzzPolicy> = fc.oneof(
  fc.record({ kind: fc.constant('manager' as const), onError: fc.oneof(policyName, fc.constant('guardPolicy' as const)) }),
  fc.record({
    kind: fc.constant('guard' as const),
    perHandler: fc.record(
      {
        beforeLLMCall: policyName.filter((p) => p !== 'block-tool'),
        afterLLMCall: policyName.filter((p) => p !== 'block-tool'),
        beforeTool: policyName,
        afterTool: policyName.filter((p) => p !== 'block-tool'),
        onAgentComplete: policyName.filter((p) => p !== 'block-tool'),
      },
      { requiredKeys: [] },
    ),
  }),
);

/** The generator of whole cases. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.record({
  replies: fc.array(reply, { minLength: 1, maxLength: 4 }),
  hooks: fc.record(
    { beforeLLMCall: behaviour, afterLLMCall: behaviour, beforeTool: behaviour, afterTool: behaviour, onAgentComplete: behaviour },
    { requiredKeys: [] },
  ),
  policy,
  structured: fc.boolean(),
  maxSteps: fc.integer({ min: 1, max: 4 }),
});

/** The hook timeout of every generated handler: a `hang` waits past it. */
export const FUZZ_HOOK_TIMEOUT_MS = 5;

const State = z.object({ count: z.number().default(0), log: z.array(z.string()).default([]) });

const tools = [
  defineTool({
    name: 'increment',
    description: 'Increment',
    inputSchema: z.object({ by: z.number().int() }),
    execute: async (input, ctx) => {
      ctx.updateState<z.infer<typeof State>>((draft) => {
        draft.count += input.by;
        draft.log.push(`+${input.by}`);
      });
      return { ok: true, by: input.by };
    },
  }),
  defineTool({ name: 'echo', description: 'Echo', inputSchema: z.object({ text: z.string() }), execute: async (input) => input.text }),
  defineTool({
    name: 'boom',
    description: 'Throws',
    inputSchema: z.object({}).passthrough(),
    execute: async () => {
      throw new Error('boom');
    },
  }),
];

function scripted(replies: readonly FuzzReply[]): ScriptedStepObject[] {
  return replies.map((r, i): ScriptedStepObject => {
    switch (r.kind) {
      case 'text':
        return { text: r.text };
      case 'error':
        return { error: { status: r.status, message: `scripted ${r.status}` } };
      case 'calls': {
        const toolCalls = r.calls.flatMap((c, j) => ('args' in c ? [{ name: c.name, args: c.args, id: `c${i}_${j}` }] : []));
        const rawToolCalls = r.calls.flatMap((c, j) => ('raw' in c ? [{ name: c.name, input: c.raw, id: `c${i}_${j}` }] : []));
        return { ...(r.text === '' ? {} : { text: r.text }), toolCalls, rawToolCalls };
      }
    }
  });
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** What one case observed, for the invariants. */
export interface FuzzObservation {
  readonly completedBeforeTool: readonly string[];
  readonly afterTool: readonly string[];
}

const ERROR_INFO = z.object({
  code: z.string().min(1),
  layer: z.enum(['provider', 'tool', 'run', 'hook', 'permission', 'transport']),
  severity: z.enum(['info', 'warning', 'error', 'fatal']),
  message: z.string(),
  retryable: z.boolean(),
  hint: z.string().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});

class InvariantError extends Error {}

function check(condition: boolean, message: string, detail?: unknown): asserts condition {
  if (!condition) throw new InvariantError(`${message}${detail === undefined ? '' : `: ${safeJson(detail)}`}`);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

function checkErrorInfo(where: string, value: unknown): void {
  const parsed = ERROR_INFO.safeParse(value);
  check(parsed.success, `${where} is not an AgentErrorInfo`, value);
}

function hookFor(point: FuzzPoint, b: FuzzBehaviour): ((...a: never[]) => unknown) | undefined {
  switch (b) {
    case 'none':
      return undefined;
    case 'throw':
      return () => {
        throw new Error(`fuzz ${point} throws`);
      };
    case 'reject':
      return async () => {
        throw new Error(`fuzz ${point} rejects`);
      };
    case 'hang':
      return () => new Promise(() => {});
    case 'rewrite':
      switch (point) {
        case 'beforeLLMCall':
          return (payload: { readonly messages: readonly unknown[] }) => ({ messages: payload.messages });
        case 'beforeTool':
          return () => ({ input: { by: 1 } });
        case 'afterTool':
          return () => ({ result: 'rewritten' });
        default:
          return () => undefined;
      }
    case 'block':
      switch (point) {
        case 'beforeLLMCall':
        case 'beforeTool':
          return () => ({ block: true, reason: `fuzz ${point} blocks` });
        default:
          return () => undefined;
      }
  }
}

/** Runs one case and checks every invariant; throws an Error naming the broken one. */
export async function runFuzzCase(c: FuzzCase): Promise<void> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    await runCase(c);
    // Let stray promises settle so their rejections are seen here.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await new Promise((resolve) => setImmediate(resolve));
    check(unhandled.length === 0, 'unhandled rejection', unhandled.map((r) => (r instanceof Error ? r.message : String(r))));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
}

async function runCase(c: FuzzCase): Promise<void> {
  const stateStore = new InMemoryStateStore();
  const streamManager = new InMemoryStreamManager();
  const executor = new JSAgentExecutor(stateStore, streamManager, new VercelAIAdapter(), { logger: silent });
  const completedBeforeTool: string[] = [];
  const afterTool: string[] = [];

  const generated: Record<string, unknown> = {};
  for (const point of FUZZ_POINTS) {
    const b = c.hooks[point];
    const handler = b === undefined ? undefined : hookFor(point, b);
    if (handler === undefined) continue;
    const own = c.policy.kind === 'guard' ? c.policy.perHandler[point] : undefined;
    generated[point] = guard(handler, { name: `fuzz_${point}`, timeoutMs: FUZZ_HOOK_TIMEOUT_MS, ...(own === undefined ? {} : { onError: own }) });
  }
  const onError = c.policy.kind === 'manager' ? (c.policy.onError === 'guardPolicy' ? guardPolicy : c.policy.onError) : undefined;
  // Observers: afterTool first (sees every afterTool call), beforeTool last (sees the chains that completed).
  const hookManager = createHookManager({ afterTool: guard((payload: AfterToolPayload) => void afterTool.push(payload.toolCall.id), { onError: 'fail-open', name: 'fuzz_after_observer' }) })
    .register(generated as AgentHooks, { timeoutMs: FUZZ_HOOK_TIMEOUT_MS, ...(onError === undefined ? {} : { onError }) })
    .register({ beforeTool: guard((payload: BeforeToolPayload) => void completedBeforeTool.push(payload.toolCall.id), { onError: 'fail-open', name: 'fuzz_before_observer' }) });

  const agent = defineAgent({
    name: 'fuzz',
    stateSchema: State,
    ...(c.structured ? { outputSchema: z.object({ answer: z.string() }) } : {}),
    llmConfig: { model: createScriptedModel(scripted(c.replies)), retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
    tools,
    maxSteps: c.maxSteps,
  });
  const handle = await executor.execute(agent, 'go', { hookManager });
  const result = await handle.result();

  check(['completed', 'failed', 'interrupted'].includes(result.status), 'terminal status', result.status);
  if (result.error !== undefined) checkErrorInfo('result.error', result.error);
  check((result.status === 'completed') === (result.error === undefined), 'an error exactly when the run did not complete', result);

  const chunks: readonly StreamChunk[] = streamManager.chunks(handle.sessionId);
  const terminal = chunks.filter((ch) => ch.type === 'end' || ch.type === 'error');
  check(terminal.length === 1, 'exactly one terminal chunk', terminal.map((t) => t.type));
  const last = terminal[0]!;
  check(last.type === 'end' ? result.status === 'completed' : last.type === 'error' && last.status === result.status, 'the terminal chunk matches the status', { chunk: last.type, status: result.status });
  check(chunks[chunks.length - 1] === last, 'the terminal chunk is the last chunk', chunks.map((ch) => ch.type));
  for (const ch of chunks) {
    if (ch.type === 'error' || ch.type === 'warning') checkErrorInfo(`${ch.type} chunk`, ch.errorInfo);
    if (ch.type === 'hook_decision' && ch.errorInfo !== undefined) checkErrorInfo('hook_decision errorInfo', ch.errorInfo);
    if (ch.type === 'tool_end' && ch.error !== undefined) checkErrorInfo('tool_end error', ch.error);
    check(JSON.stringify(JSON.parse(JSON.stringify(ch))) === JSON.stringify(ch), 'a chunk round-trips through JSON', ch);
  }

  for (const id of completedBeforeTool) check(afterTool.includes(id), 'a beforeTool chain that completed has its afterTool', { id, completedBeforeTool, afterTool });

  const session = await stateStore.loadSession(handle.sessionId);
  check(session !== undefined, 'the session is stored');
  const text = JSON.stringify({ state: session.state, messages: session.messages });
  check(JSON.stringify(JSON.parse(text)) === text, 'the stored transcript round-trips through JSON');
  const resultIds = new Set(session.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  for (const m of session.messages) {
    if (m.role === 'assistant') for (const tc of m.toolCalls ?? []) check(resultIds.has(tc.id), 'every stored tool call has a result row', { id: tc.id, messages: session.messages });
    if (m.role === 'tool' && m.errorInfo !== undefined) checkErrorInfo('stored tool row errorInfo', m.errorInfo);
  }
  State.parse(session.state);
  await executor.close();
}

/** Runs `numRuns` cases (seed optional); throws fast-check's report, counterexample included, on a failure. */
export async function fuzzRuns(options: { readonly numRuns: number; readonly seed?: number }): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fuzzCase, (c) => runFuzzCase(c)),
    { numRuns: options.numRuns, ...(options.seed === undefined ? {} : { seed: options.seed }), endOnFailure: false },
  );
}
