import type { AgentResult, RunUsageSummary, StreamChunk } from '@helix-agents/sdk';
import type { HookDispatchObserver, HookHandlerCall } from '@helix-agents/sdk/hooks';
import type { Output } from './log.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

interface Style {
  dim(text: string): string;
  green(text: string): string;
  red(text: string): string;
  cyan(text: string): string;
}

const plainStyle: Style = { dim: (t) => t, green: (t) => t, red: (t) => t, cyan: (t) => t };
const ansiStyle: Style = {
  dim: (t) => `\x1b[2m${t}\x1b[22m`,
  green: (t) => `\x1b[32m${t}\x1b[39m`,
  red: (t) => `\x1b[31m${t}\x1b[39m`,
  cyan: (t) => `\x1b[36m${t}\x1b[39m`,
};

function ms(value: number): string {
  return value < 1_000 ? `${Math.round(value)} ms` : `${(value / 1_000).toFixed(1)} s`;
}

function brief(value: unknown, max = 80): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Options of {@link ProgressView}. */
export interface ProgressOptions {
  /** Redraw spinners and use colours (default: `out.isTTY`). Off, every update is one plain line. */
  readonly live?: boolean;
  /** Colours (default: live and no NO_COLOR in the environment). */
  readonly color?: boolean;
  /** Spinner frame interval in ms (default 80). */
  readonly frameMs?: number;
}

/**
 * The live view of one run on stdout: the model's text as it streams, each tool call with a spinner
 * while it runs and its duration when it ends, and hook activity. On a terminal the spinner line is
 * redrawn in place; elsewhere (a pipe, a file, CI) every update is one plain line. Lines that arrive
 * while text is streaming wait for the text to pause, so they never split a sentence.
 */
export class ProgressView implements HookDispatchObserver {
  readonly #out: Output;
  readonly #live: boolean;
  readonly #style: Style;
  readonly #frameMs: number;
  readonly #tools = new Map<string, { readonly name: string; readonly started: number }>();
  readonly #queued: string[] = [];
  #thinkingSince: number | undefined;
  #midLine = false;
  #streaming = false;
  #wroteText = false;
  #spinnerShown = false;
  #frame = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #usage: RunUsageSummary | undefined;
  #hookCalls = 0;
  #hookErrors = 0;

  constructor(out: Output, options: ProgressOptions = {}) {
    this.#out = out;
    this.#live = options.live ?? out.isTTY === true;
    this.#style = (options.color ?? (this.#live && process.env['NO_COLOR'] === undefined)) ? ansiStyle : plainStyle;
    this.#frameMs = options.frameMs ?? 80;
  }

  /** Handler calls and failures seen so far. */
  get hookStats(): { readonly calls: number; readonly errors: number } {
    return { calls: this.#hookCalls, errors: this.#hookErrors };
  }

  /** Renders one chunk of the run's stream. */
  onChunk(chunk: StreamChunk): void {
    if (chunk.type === 'text_delta') {
      this.#thinkingSince = undefined;
      this.#clearSpinner();
      this.#streaming = true;
      this.#wroteText = true;
      this.#out.write(chunk.delta);
      this.#midLine = !chunk.delta.endsWith('\n');
      return;
    }
    this.#streaming = false;
    this.#flushQueued();
    switch (chunk.type) {
      case 'step_start':
        this.#thinkingSince = Date.now();
        if (this.#live) this.#endLine();
        this.#startSpinner();
        break;
      case 'actions_requested':
        this.#thinkingSince = undefined;
        break;
      case 'tool_start':
        this.#thinkingSince = undefined;
        this.#tools.set(chunk.toolCallId, { name: chunk.toolName, started: Date.now() });
        if (!this.#live) this.#line(`[tool] ${chunk.toolName} started ${brief(chunk.arguments)}`);
        else this.#endLine();
        this.#startSpinner();
        break;
      case 'tool_end': {
        this.#tools.delete(chunk.toolCallId);
        const s = this.#style;
        if (this.#live) {
          this.#line(
            chunk.success
              ? `${s.green('✓')} ${chunk.toolName} ${s.dim(ms(chunk.durationMs))}`
              : `${s.red('✗')} ${chunk.toolName} ${s.dim(ms(chunk.durationMs))} ${s.red(chunk.error?.message ?? 'failed')}`,
          );
        } else {
          this.#line(chunk.success ? `[tool] ${chunk.toolName} ok (${ms(chunk.durationMs)})` : `[tool] ${chunk.toolName} failed (${ms(chunk.durationMs)}): ${chunk.error?.message ?? 'failed'}`);
        }
        break;
      }
      case 'warning':
        this.#line(this.#live ? this.#style.dim(`! ${chunk.errorInfo.message}`) : `[warning] ${chunk.errorInfo.message}`);
        break;
      case 'end':
      case 'error':
        this.#thinkingSince = undefined;
        this.#usage = chunk.usage;
        break;
      default:
        break;
    }
  }

  /** Dispatcher observer: shows each handler call, except the per-delta ones, which would flood the view. */
  handlerFinished(call: HookHandlerCall & { readonly durationMs: number; readonly error?: unknown }): void {
    this.#hookCalls++;
    if (call.error !== undefined) this.#hookErrors++;
    if (call.event.type === 'message.appended' && call.error === undefined) return;
    const s = this.#style;
    const label = `${call.hook} · ${call.event.type}${call.key === '*' ? ' (*)' : ''}`;
    const why = call.error instanceof Error ? call.error.message : String(call.error);
    const text = this.#live
      ? call.error === undefined
        ? s.dim(`↳ hook ${label} ${ms(call.durationMs)}`)
        : `${s.red('↳ hook')} ${label} ${s.red(`threw: ${why}`)}`
      : call.error === undefined
        ? `[hook] ${label} ok (${ms(call.durationMs)})`
        : `[hook] ${label} threw: ${why}`;
    if (this.#streaming) this.#queued.push(text);
    else this.#line(text);
  }

  /** Ends the view with the run's outcome: a structured output as JSON, then a summary line. */
  finish(result: AgentResult, sessionId: string): void {
    this.#streaming = false;
    this.#flushQueued();
    this.#stopSpinner();
    this.#endLine();
    const s = this.#style;
    if (result.status === 'completed') {
      const output: unknown = result.output;
      if (typeof output !== 'string') this.#out.write(`${JSON.stringify(output, null, 2)}\n`);
      else if (!this.#wroteText) this.#out.write(`${output}\n`);
    }
    const usage = this.#usage;
    const parts = [
      `${result.stepCount} step${result.stepCount === 1 ? '' : 's'}`,
      ...(usage ? [`${usage.inputTokens} in / ${usage.outputTokens} out tokens`] : []),
      ...(this.#hookCalls > 0 ? [`${this.#hookCalls} hook call${this.#hookCalls === 1 ? '' : 's'}${this.#hookErrors > 0 ? `, ${this.#hookErrors} threw` : ''}`] : []),
      `session ${sessionId}`,
    ];
    const head =
      result.status === 'completed'
        ? `${this.#live ? s.green('✓') : '[run]'} completed in ${ms(result.durationMs)}`
        : `${this.#live ? s.red('✗') : '[run]'} ${result.status} after ${ms(result.durationMs)}: ${result.error?.message ?? 'unknown error'}`;
    this.#out.write(`${head} ${s.dim(`· ${parts.join(' · ')}`)}\n`);
  }

  /** Stops the spinner timer (idempotent). */
  dispose(): void {
    this.#stopSpinner();
  }

  #line(text: string): void {
    this.#clearSpinner();
    this.#endLine();
    this.#out.write(`${text}\n`);
    this.#drawSpinner();
  }

  #endLine(): void {
    if (this.#midLine) {
      this.#out.write('\n');
      this.#midLine = false;
    }
  }

  #flushQueued(): void {
    for (const text of this.#queued.splice(0)) this.#line(text);
  }

  #spinnerText(): string | undefined {
    const s = this.#style;
    const frame = s.cyan(FRAMES[this.#frame % FRAMES.length] ?? '*');
    if (this.#tools.size > 0) {
      const now = Date.now();
      const list = [...this.#tools.values()].map((t) => `${t.name} ${s.dim(ms(now - t.started))}`).join(', ');
      return `${frame} ${list}`;
    }
    if (this.#thinkingSince !== undefined) return `${frame} ${s.dim(`thinking ${ms(Date.now() - this.#thinkingSince)}`)}`;
    return undefined;
  }

  #startSpinner(): void {
    if (!this.#live) return;
    this.#drawSpinner();
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      this.#frame++;
      this.#drawSpinner();
    }, this.#frameMs);
    this.#timer.unref();
  }

  #drawSpinner(): void {
    if (!this.#live || this.#midLine) return;
    const text = this.#spinnerText();
    if (text === undefined) {
      this.#clearSpinner();
      return;
    }
    this.#out.write(`\r\x1b[2K${text}`);
    this.#spinnerShown = true;
  }

  #clearSpinner(): void {
    if (!this.#spinnerShown) return;
    this.#out.write('\r\x1b[2K');
    this.#spinnerShown = false;
  }

  #stopSpinner(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#clearSpinner();
  }
}
