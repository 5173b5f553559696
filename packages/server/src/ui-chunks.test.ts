// The mapping of a run's chunks to UI message chunks, for all chunk sequences (fast-check), and the SSE
// response it rides on (keep-alive, cancel).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import type { StreamChunk } from '@helix-agents/sdk';
import { isAfter, parsePositionId, positionId, RunUiMapper, type PositionedUiChunk } from './ui-chunks.js';
import { sseResponse } from './sse.js';

type Step =
  | { kind: 'step'; attempt: 1 | 2 }
  | { kind: 'text'; delta: string }
  | { kind: 'reasoning'; delta: string; blockEnd: boolean }
  | { kind: 'calls'; n: 1 | 2 }
  | { kind: 'approval' }
  | { kind: 'result'; success: boolean; denied: boolean }
  | { kind: 'custom'; name: string }
  | { kind: 'warning' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('step' as const), attempt: fc.constantFrom(1 as const, 2 as const) }),
  fc.record({ kind: fc.constant('text' as const), delta: fc.string({ maxLength: 5 }) }),
  fc.record({ kind: fc.constant('reasoning' as const), delta: fc.string({ maxLength: 5 }), blockEnd: fc.boolean() }),
  fc.record({ kind: fc.constant('calls' as const), n: fc.constantFrom(1 as const, 2 as const) }),
  fc.record({ kind: fc.constant('approval' as const) }),
  fc.record({ kind: fc.constant('result' as const), success: fc.boolean(), denied: fc.boolean() }),
  fc.record({ kind: fc.constant('custom' as const), name: fc.constantFrom('progress', 'note') }),
  fc.record({ kind: fc.constant('warning' as const) }),
);
const terminal = fc.constantFrom('end' as const, 'suspended' as const, 'failed' as const, 'interrupted' as const, 'none' as const);

const info = { code: 'x', layer: 'run' as const, severity: 'error' as const, message: 'Broken.', retryable: false };

/** A run's chunks from the generated steps: calls refer to calls requested before them. */
function runChunks(steps: readonly Step[], end: 'end' | 'suspended' | 'failed' | 'interrupted' | 'none', startSeq: number): StreamChunk[] {
  const base = (seq: number) => ({ streamId: 's', agentId: 's', agentType: 'a', runId: 'r1', timestamp: 0, seq });
  let seq = startSeq;
  const out: StreamChunk[] = [{ type: 'run_started', signal: 'start', ...base(seq++) }];
  const calls: string[] = [];
  let stepIndex = 0;
  for (const s of steps) {
    if (s.kind === 'step') out.push({ type: 'step_start', stepIndex: s.attempt === 1 ? stepIndex++ : stepIndex, attempt: s.attempt, ...base(seq++) });
    else if (s.kind === 'text') out.push({ type: 'text_delta', stepIndex, delta: s.delta, ...base(seq++) });
    else if (s.kind === 'reasoning') out.push({ type: 'reasoning_delta', stepIndex, ...(s.blockEnd ? { delta: '', blockEnd: true } : { delta: s.delta }), ...base(seq++) });
    else if (s.kind === 'calls') {
      const ids = Array.from({ length: s.n }, (_, i) => `call_${seq}_${i}`);
      calls.push(...ids);
      out.push({ type: 'actions_requested', stepIndex, calls: ids.map((callId) => ({ callId, toolName: 'tool', args: { callId } })), ...base(seq++) });
    } else if (s.kind === 'approval' && calls.length > 0) out.push({ type: 'tool_approval_request', toolCallId: calls[calls.length - 1]!, toolName: 'tool', arguments: {}, ...base(seq++) });
    else if (s.kind === 'result' && calls.length > 0) {
      const toolCallId = calls.shift()!;
      out.push({ type: 'tool_end', toolCallId, toolName: 'tool', success: s.success, durationMs: 1, ...(s.success ? { result: { ok: toolCallId } } : { error: { ...info, code: s.denied ? 'permission_denied' : 'tool_failed' } }), ...base(seq++) });
    } else if (s.kind === 'custom') out.push({ type: 'custom', eventName: s.name, data: { seq }, ...base(seq++) });
    else if (s.kind === 'warning') out.push({ type: 'warning', errorInfo: info, ...base(seq++) });
  }
  if (end === 'end') out.push({ type: 'end', output: 'done', ...base(seq++) });
  else if (end === 'suspended') out.push({ type: 'suspended', reason: 'client_tool', pendingToolCallIds: [], ...base(seq++) });
  else if (end === 'failed' || end === 'interrupted') out.push({ type: 'error', status: end, errorInfo: info, ...base(seq++) });
  return out;
}

async function rebuild(chunks: readonly UIMessageChunk[]): Promise<{ message: UIMessage | undefined; errors: unknown[] }> {
  const errors: unknown[] = [];
  let message: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  try {
    for await (const m of readUIMessageStream({ stream, onError: (e) => void errors.push(e) })) message = m;
  } catch (error) {
    errors.push(error);
  }
  return { message, errors };
}

describe('RunUiMapper', () => {
  it('for any run, the UI chunks are read by readUIMessageStream without a protocol error, with every text and reasoning delta in order, and positions strictly increase', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), terminal, fc.nat(1000), async (steps, end, startSeq) => {
        const chunks = runChunks(steps, end, startSeq);
        const mapper = new RunUiMapper('m1');
        const positioned: PositionedUiChunk[] = chunks.flatMap((c) => mapper.map(c));
        const closing = mapper.ended ? [] : mapper.close('other');
        for (let i = 1; i < positioned.length; i++) expect(isAfter(positioned[i]!.position, positioned[i - 1]!.position)).toBe(true);
        for (const p of positioned) expect(parsePositionId(positionId(p.position))).toEqual(p.position);
        const ui = [...positioned.map((p) => p.chunk), ...closing] as UIMessageChunk[];
        const { message, errors } = await rebuild(ui);
        // The only errors are the protocol `error` part of a failed run.
        expect(errors.length).toBe(end === 'failed' ? 1 : 0);
        const text = (message?.parts ?? []).filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('');
        const deltas = chunks.filter((c) => c.type === 'text_delta').map((c) => (c as { delta: string }).delta).join('');
        expect(text).toBe(deltas);
        const reasoning = (message?.parts ?? []).filter((p) => p.type === 'reasoning').map((p) => (p as { text: string }).text).join('');
        const thoughts = chunks.filter((c) => c.type === 'reasoning_delta').map((c) => (c as { delta: string }).delta).join('');
        expect(reasoning).toBe(thoughts);
        // Every part was closed: nothing is left streaming.
        for (const part of message?.parts ?? []) if (part.type === 'text' || part.type === 'reasoning') expect(part.state).toBe('done');
        expect(ui.at(-1)?.type).toBe(end === 'interrupted' ? 'abort' : 'finish');
        expect(ui.filter((c) => c.type === 'start')).toEqual([{ type: 'start', messageId: 'm1' }]);
      }),
      { numRuns: 300 },
    );
  });

  it('replaying a run and skipping up to any event gives exactly the rest (what a resume sends)', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 20 }), terminal, fc.nat(), (steps, end, cutSeed) => {
        const chunks = runChunks(steps, end, 0);
        const first = new RunUiMapper('m');
        const full = chunks.flatMap((c) => first.map(c));
        const cut = full[cutSeed % full.length]!.position;
        const again = new RunUiMapper('m');
        const rest = chunks.flatMap((c) => again.map(c)).filter((p) => isAfter(p.position, cut));
        const index = full.findIndex((p) => positionId(p.position) === positionId(cut));
        expect(rest).toEqual(full.slice(index + 1));
      }),
    );
  });
});

describe('RunUiMapper reasoning', () => {
  it('maps a reasoning block to reasoning-start / reasoning-delta / reasoning-end before the text part, in one step', () => {
    const base = (seq: number) => ({ streamId: 's', agentId: 's', agentType: 'a', runId: 'r1', timestamp: 0, seq });
    const mapper = new RunUiMapper('m');
    const chunks: StreamChunk[] = [
      { type: 'run_started', signal: 'start', ...base(0) },
      { type: 'step_start', stepIndex: 0, attempt: 1, ...base(1) },
      { type: 'reasoning_delta', stepIndex: 0, delta: 'Let me ', ...base(2) },
      { type: 'reasoning_delta', stepIndex: 0, delta: 'think.', ...base(3) },
      { type: 'reasoning_delta', stepIndex: 0, delta: '', blockEnd: true, ...base(4) },
      { type: 'text_delta', stepIndex: 0, delta: 'Hi', ...base(5) },
      { type: 'end', output: 'Hi', ...base(6) },
    ];
    expect(chunks.flatMap((c) => mapper.map(c)).map((p) => p.chunk)).toEqual([
      { type: 'start', messageId: 'm' },
      { type: 'start-step' },
      { type: 'reasoning-start', id: 'reasoning-2' },
      { type: 'reasoning-delta', id: 'reasoning-2', delta: 'Let me ' },
      { type: 'reasoning-delta', id: 'reasoning-2', delta: 'think.' },
      { type: 'reasoning-end', id: 'reasoning-2' },
      { type: 'text-start', id: 'text-5' },
      { type: 'text-delta', id: 'text-5', delta: 'Hi' },
      { type: 'text-end', id: 'text-5' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
    ]);
  });
});

describe('sseResponse', () => {
  it('sends a keep-alive comment while no event comes, and a cancelled response returns its iterator and calls onClose', async () => {
    let returned = false;
    let closed = 0;
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    async function* events() {
      try {
        yield { id: '1', data: '{"a":1}' };
        await held;
        yield { data: 'never' };
      } finally {
        returned = true;
      }
    }
    const response = sseResponse(events(), { keepAliveMs: 30, onClose: () => void closed++ });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes(': keep-alive')) text += (await reader.read()).value ?? '';
    expect(text.startsWith('id: 1\ndata: {"a":1}\n\n')).toBe(true);
    await reader.cancel();
    release();
    await new Promise((r) => setTimeout(r, 20));
    expect(returned).toBe(true);
    expect(closed).toBe(1);
  });
});
