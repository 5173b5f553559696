import { createInterface, type Interface } from 'node:readline';
import { z } from 'zod';
import type { ToolDefinition } from '../define.js';
import { ConfigError, HookError, RunInterruptedError } from '../errors.js';
import type { HookObject } from '../hooks/manager.js';
import type { BeforeToolPayload, BeforeToolResult, HookContext, HookPoint } from '../hooks/types.js';
import type { ToolCall } from '../messages.js';
import { checkSchema } from '../tool-schema.js';

/** What a human (or a program standing in for one) decided about one tool call. */
export type ConfirmationDecision =
  | { readonly decision: 'confirm'; readonly toolCallId?: string }
  | { readonly decision: 'modify'; readonly input: unknown; readonly toolCallId?: string }
  | { readonly decision: 'reject'; readonly feedback?: string; readonly toolCallId?: string };

/** The call a strategy decides on: the validated call, its tool, and the hook context (user, session, abort signal). */
export interface ConfirmationRequest extends ToolCall {
  readonly tool: ToolDefinition;
  readonly ctx: HookContext;
}

/** How confirmation is asked for one tool: a terminal prompt, a program, a fixed answer. */
export interface ConfirmationStrategy {
  /** Shown in audit events and errors. */
  readonly name: string;
  /** Decides on one call; a decision that names another `toolCallId` is refused (decisions are bound to their call). */
  decide(call: ConfirmationRequest): ConfirmationDecision | Promise<ConfirmationDecision>;
  /** Releases what the strategy holds (a terminal, a client); called by the hook's `close()`. */
  close?(): void | Promise<void>;
}

/** Options of {@link createConfirmationHook}. */
export interface ConfirmationHookOptions {
  /** A strategy per tool name; `'*'` applies to every tool without its own entry. A tool with neither runs unchanged. */
  readonly strategies: Readonly<Record<string, ConfirmationStrategy>>;
}

/** The custom event a {@link ConfirmationHook} emits for every decision (`ctx.emitCustom('tool_confirmation', …)`). */
export interface ToolConfirmationEvent {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly strategy: string;
  readonly decision: ConfirmationDecision['decision'];
  /** The arguments the tool will run with (modify only). */
  readonly input?: unknown;
  /** The explanation of a modify, worded for the model (Haystack's "parameters were updated" message). */
  readonly message?: string;
  readonly feedback?: string;
  /** The block reason the model receives (reject only). */
  readonly reason?: string;
}

/** The name of the custom event carrying a {@link ToolConfirmationEvent}. */
export const TOOL_CONFIRMATION_EVENT = 'tool_confirmation';

const DecisionSchema = z.discriminatedUnion('decision', [
  z.object({ decision: z.literal('confirm'), toolCallId: z.string().optional() }),
  z.object({ decision: z.literal('modify'), input: z.unknown(), toolCallId: z.string().optional() }),
  z.object({ decision: z.literal('reject'), feedback: z.string().optional(), toolCallId: z.string().optional() }),
]);

/** The reason a rejected call is blocked with; the model sees it in the error tool result. */
export function rejectionReason(toolName: string, feedback?: string): string {
  const base = `Tool execution for '${toolName}' was rejected by the user.`;
  return feedback !== undefined && feedback.trim() !== '' ? `${base} With user feedback: ${feedback.trim()}` : base;
}

/** The explanation recorded for a modified call. */
export function modificationMessage(toolName: string, input: unknown): string {
  return `The parameters for tool '${toolName}' were updated by the user to:\n${JSON.stringify(input, null, 2)}`;
}

/**
 * A beforeTool hook where a human confirms, edits or rejects each call, through a strategy chosen by tool
 * name. Reject blocks the call (the model gets an error tool result and afterTool fires with `blocked:
 * true`, C13/D4); modify returns `{ input }`, validated again by the runtime. Registered after a guard,
 * it is never asked about a call the guard blocked: the chain stops at the first block.
 */
export class ConfirmationHook implements HookObject {
  /** Only beforeTool: a decision must come before the tool runs. */
  readonly allowedHookPoints: readonly HookPoint[] = Object.freeze(['beforeTool'] as const);
  readonly #strategies: ReadonlyMap<string, ConfirmationStrategy>;

  constructor(options: ConfirmationHookOptions) {
    if (typeof options !== 'object' || options === null || typeof options.strategies !== 'object' || options.strategies === null) {
      throw new ConfigError('createConfirmationHook needs { strategies: { [toolName | "*"]: strategy } }.');
    }
    const strategies = new Map<string, ConfirmationStrategy>();
    for (const [toolName, strategy] of Object.entries(options.strategies)) {
      if (typeof strategy !== 'object' || strategy === null || typeof strategy.decide !== 'function') {
        throw new ConfigError(`The confirmation strategy for "${toolName}" must be an object with a decide() method (e.g. terminalPrompt(), programmaticStrategy(fn)).`, {
          tool: toolName,
        });
      }
      strategies.set(toolName, strategy);
    }
    this.#strategies = strategies;
  }

  /** The strategy for a tool: its own entry, then `'*'`; undefined means the tool runs unchanged. */
  strategyFor(toolName: string): ConfirmationStrategy | undefined {
    return this.#strategies.get(toolName) ?? this.#strategies.get('*');
  }

  /** Asks the tool's strategy and turns its decision into allow, `{ input }` or `{ block, reason }`. */
  async beforeTool(payload: BeforeToolPayload, ctx: HookContext): Promise<BeforeToolResult | undefined> {
    const { toolCall, tool } = payload;
    const strategy = this.strategyFor(toolCall.name);
    if (!strategy) return undefined;
    const raw: unknown = await strategy.decide({ id: toolCall.id, name: toolCall.name, arguments: toolCall.arguments, tool, ctx });
    const parsed = DecisionSchema.safeParse(raw);
    if (!parsed.success) {
      throw new HookError('hook_failed', `Confirmation strategy "${strategy.name}" returned an invalid decision for '${toolCall.name}': ${z.prettifyError(parsed.error)}`, {
        details: { hook: 'beforeTool', strategy: strategy.name, tool: toolCall.name, toolCallId: toolCall.id },
      });
    }
    const decision = parsed.data;
    if (decision.toolCallId !== undefined && decision.toolCallId !== toolCall.id) {
      // A decision meant for another call must never be applied to this one (the UI answered the wrong prompt).
      throw new HookError('hook_failed', `Confirmation strategy "${strategy.name}" answered for tool call ${decision.toolCallId}, but was asked about ${toolCall.id}.`, {
        details: { hook: 'beforeTool', strategy: strategy.name, tool: toolCall.name, toolCallId: toolCall.id, answeredFor: decision.toolCallId },
      });
    }
    const base = { toolCallId: toolCall.id, toolName: toolCall.name, strategy: strategy.name };
    switch (decision.decision) {
      case 'confirm':
        await ctx.emitCustom(TOOL_CONFIRMATION_EVENT, { ...base, decision: 'confirm' } satisfies ToolConfirmationEvent);
        return undefined;
      case 'modify': {
        // We have no ctx.updateMessages yet, so the explanation goes to the stream instead of the transcript.
        const message = modificationMessage(toolCall.name, decision.input);
        await ctx.emitCustom(TOOL_CONFIRMATION_EVENT, { ...base, decision: 'modify', input: decision.input, message } satisfies ToolConfirmationEvent);
        return { input: decision.input };
      }
      case 'reject': {
        const reason = rejectionReason(toolCall.name, decision.feedback);
        await ctx.emitCustom(TOOL_CONFIRMATION_EVENT, {
          ...base,
          decision: 'reject',
          reason,
          ...(decision.feedback === undefined ? {} : { feedback: decision.feedback }),
        } satisfies ToolConfirmationEvent);
        return { block: true, reason };
      }
    }
  }

  /** Closes every distinct strategy once (the executor calls this from its own `close()`). */
  async close(): Promise<void> {
    for (const strategy of new Set(this.#strategies.values())) await strategy.close?.();
  }
}

/** Creates a {@link ConfirmationHook}: `createHookManager(createConfirmationHook({ strategies: { write_file: terminalPrompt() } }))`. */
export function createConfirmationHook(options: ConfirmationHookOptions): ConfirmationHook {
  return new ConfirmationHook(options);
}

/** A strategy computed by your code: a web UI, a policy engine, a test. */
export function programmaticStrategy(
  decide: (call: ConfirmationRequest) => ConfirmationDecision | Promise<ConfirmationDecision>,
  name = 'programmatic',
): ConfirmationStrategy {
  if (typeof decide !== 'function') throw new ConfigError('programmaticStrategy needs a function (call) => decision.');
  return { name, decide };
}

/** Confirms every call (useful as the `'*'` default next to stricter per-tool strategies). */
export const alwaysConfirm: ConfirmationStrategy = Object.freeze({ name: 'alwaysConfirm', decide: () => ({ decision: 'confirm' as const }) });

/** Rejects every call without feedback. */
export const alwaysReject: ConfirmationStrategy = Object.freeze({ name: 'alwaysReject', decide: () => ({ decision: 'reject' as const }) });

/** Options of {@link terminalPrompt}. */
export interface TerminalPromptOptions {
  /** Where answers are read from (default `process.stdin`). */
  readonly input?: NodeJS.ReadableStream;
  /** Where prompts are written (default `process.stdout`). */
  readonly output?: NodeJS.WritableStream;
}

/**
 * A strategy that asks on a terminal: it shows the tool and its arguments and reads `[y]es`, `[n]o`
 * (then optional feedback) or `[e]dit` (then new arguments as JSON, checked against the tool's input
 * schema). Prompts are asked one at a time even when a step's calls run in parallel. A closed input
 * rejects: with nobody to ask, the safe answer is no.
 */
export function terminalPrompt(options: TerminalPromptOptions = {}): ConfirmationStrategy {
  return new TerminalPrompt(options.input ?? process.stdin, options.output ?? process.stdout);
}

class TerminalPrompt implements ConfirmationStrategy {
  readonly name = 'terminalPrompt';
  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  #rl: Interface | undefined;
  #closed = false;
  readonly #lines: string[] = [];
  #waiter: ((line: string | null) => void) | undefined;
  // Parallel calls of one step would interleave their prompts on one terminal: ask one at a time.
  #queue: Promise<unknown> = Promise.resolve();

  constructor(input: NodeJS.ReadableStream, output: NodeJS.WritableStream) {
    this.#input = input;
    this.#output = output;
  }

  decide(call: ConfirmationRequest): Promise<ConfirmationDecision> {
    const turn = this.#queue.then(() => this.#ask(call));
    this.#queue = turn.catch(() => undefined);
    return turn;
  }

  close(): void {
    this.#closed = true;
    this.#rl?.close();
  }

  async #ask(call: ConfirmationRequest): Promise<ConfirmationDecision> {
    try {
      this.#write(`\nTool call requested: ${call.name} (id ${call.id})\n`);
      if (call.tool.description) this.#write(`Description: ${call.tool.description}\n`);
      this.#write(`Arguments:\n${JSON.stringify(call.arguments, null, 2)}\n`);
      for (;;) {
        const answer = await this.#question('Run this tool? [y]es / [n]o / [e]dit: ', call.ctx.abortSignal);
        if (answer === null) return this.#noAnswer();
        const choice = answer.trim().toLowerCase();
        if (choice === 'y' || choice === 'yes') return { decision: 'confirm', toolCallId: call.id };
        if (choice === 'n' || choice === 'no') {
          const feedback = await this.#question('Feedback for the model (optional, Enter to skip): ', call.ctx.abortSignal);
          const text = feedback?.trim() ?? '';
          return text === '' ? { decision: 'reject', toolCallId: call.id } : { decision: 'reject', feedback: text, toolCallId: call.id };
        }
        if (choice === 'e' || choice === 'edit') {
          const edited = await this.#edit(call);
          if (edited === null) return this.#noAnswer();
          if (edited !== undefined) return edited;
          continue;
        }
        this.#write('Please answer y, n or e.\n');
      }
    } finally {
      if (this.#waiter === undefined) this.#idle();
    }
  }

  /** Reads new arguments; undefined means "back to the question", null means the input closed. */
  async #edit(call: ConfirmationRequest): Promise<ConfirmationDecision | undefined | null> {
    this.#write('New arguments as JSON (an empty line ends the entry; an empty entry goes back):\n');
    let text = '';
    for (;;) {
      const line = await this.#question('', call.ctx.abortSignal);
      if (line === null) return null;
      if (line.trim() === '') {
        if (text.trim() === '') return undefined;
        break;
      }
      text += `${line}\n`;
      if (parses(text)) break;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.#write(`That is not valid JSON (${error instanceof Error ? error.message : String(error)}).\n`);
      return undefined;
    }
    const checked = await checkSchema(call.tool.inputSchema, value);
    if (!checked.ok) {
      this.#write(`Those arguments do not match the tool's input:\n${checked.message}\n`);
      return undefined;
    }
    if (JSON.stringify(checked.value) === JSON.stringify(call.arguments)) return { decision: 'confirm', toolCallId: call.id };
    return { decision: 'modify', input: value, toolCallId: call.id };
  }

  #noAnswer(): ConfirmationDecision {
    this.#write('\nNo answer (the input closed): rejecting the call.\n');
    return { decision: 'reject' };
  }

  #write(text: string): void {
    this.#output.write(text);
  }

  async #question(prompt: string, signal: AbortSignal): Promise<string | null> {
    if (prompt !== '') this.#write(prompt);
    const buffered = this.#lines.shift();
    if (buffered !== undefined) return buffered;
    if (this.#closed) return null;
    const rl = this.#interface();
    if (signal.aborted) throw new RunInterruptedError('The run was stopped while waiting for a confirmation.');
    return new Promise<string | null>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiter = undefined;
        reject(new RunInterruptedError('The run was stopped while waiting for a confirmation.'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiter = (line) => {
        signal.removeEventListener('abort', onAbort);
        this.#waiter = undefined;
        resolve(line);
      };
      (this.#input as { ref?: () => void }).ref?.();
      rl.resume();
    });
  }

  // An idle terminal must not keep the process alive: a paused stdin still holds the event loop until unref'd.
  #idle(): void {
    this.#rl?.pause();
    (this.#input as { unref?: () => void }).unref?.();
  }

  #interface(): Interface {
    if (this.#rl) return this.#rl;
    const rl = createInterface({ input: this.#input, terminal: false });
    // Lines are queued here, not read with rl.question(): a pasted block of answers must not be lost between prompts.
    rl.on('line', (line) => {
      if (this.#waiter) this.#waiter(line);
      else this.#lines.push(line);
    });
    rl.on('close', () => {
      this.#closed = true;
      this.#waiter?.(null);
    });
    this.#rl = rl;
    return rl;
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
