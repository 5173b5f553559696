/** One Server-Sent Event. `data` is one line of JSON (or `[DONE]`). */
export interface SseEvent {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/** Options of {@link sseResponse}. */
export interface SseResponseOptions {
  readonly headers?: Readonly<Record<string, string>>;
  /** A comment line is sent after this long without an event, so proxies keep the connection open. */
  readonly keepAliveMs: number;
  /** Called once when the response ends: the events ran out, or the client went away. */
  readonly onClose?: () => void;
}

/** The headers of every event stream the server sends. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

const encoder = new TextEncoder();
const PING = encoder.encode(': keep-alive\n\n');

/** Encodes one event. Ids and event names never hold a line break (they are ours); data is one line. */
export function encodeSse(event: SseEvent): string {
  let text = '';
  if (event.event !== undefined) text += `event: ${event.event}\n`;
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  return `${text}data: ${event.data}\n\n`;
}

/**
 * A streaming `Response` of `events`, pulled as the client reads (a slow reader slows the pull, it
 * does not fill memory). A comment line goes out after `keepAliveMs` without an event. When the client goes away the stream is cancelled, the
 * iterator returned and `onClose` called: the producer should watch an AbortSignal that `onClose`
 * aborts, so a reader waiting for the next chunk stops at once.
 */
export function sseResponse(events: AsyncIterable<SseEvent>, options: SseResponseOptions): Response {
  const iterator = events[Symbol.asyncIterator]();
  let closed = false;
  let lastWrite = Date.now();
  let keepAlive: NodeJS.Timeout | undefined;
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    options.onClose?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => {
        if (closed || Date.now() - lastWrite < options.keepAliveMs) return;
        lastWrite = Date.now();
        controller.enqueue(PING);
      }, Math.max(10, Math.floor(options.keepAliveMs / 2)));
      keepAlive.unref();
    },
    async pull(controller) {
      try {
        const result = await iterator.next();
        if (result.done) {
          controller.close();
          close();
          return;
        }
        lastWrite = Date.now();
        controller.enqueue(encoder.encode(encodeSse(result.value)));
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    cancel() {
      close();
      void iterator.return?.()?.catch(() => undefined);
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
}
