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
 * does not fill memory). When the client goes away the stream is cancelled and the iterator returned;
 * the producer should also watch an AbortSignal that `onClose` aborts, so a reader waiting for the
 * next chunk stops at once.
 */
export function sseResponse(events: AsyncIterable<SseEvent>, options: SseResponseOptions): Response {
  const iterator = events[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<SseEvent>> | undefined;
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    options.onClose?.();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      pending ??= iterator.next();
      let timer: NodeJS.Timeout | undefined;
      const ping = new Promise<'ping'>((resolve) => {
        timer = setTimeout(() => resolve('ping'), options.keepAliveMs);
      });
      try {
        const result = await Promise.race([pending, ping]);
        if (result === 'ping') {
          controller.enqueue(PING);
          return;
        }
        pending = undefined;
        if (result.done) {
          controller.close();
          close();
          return;
        }
        controller.enqueue(encoder.encode(encodeSse(result.value)));
      } catch (error) {
        pending = undefined;
        close();
        controller.error(error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel() {
      close();
      void iterator.return?.()?.catch(() => undefined);
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
}
