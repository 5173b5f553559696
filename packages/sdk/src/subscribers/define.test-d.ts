import { describe, expectTypeOf, it } from 'vitest';
import type { AgentErrorInfo } from '../errors.js';
import { defineHook } from './define.js';
import type { ActionResult, RequestedAction, SessionEvent, SessionEventType, TurnCost, TurnUsage } from './events.js';
import type { SessionHookContext, SessionPurpose } from './context.js';

describe('rule 147: a typed key narrows event.data; "*" receives the union', () => {
  it('rule 147: narrows each key of the vocabulary', () => {
    defineHook({
      events: {
        'message.received'(event) {
          expectTypeOf(event.type).toEqualTypeOf<'message.received'>();
          expectTypeOf(event.data.text).toEqualTypeOf<string>();
        },
        'message.appended'(event) {
          expectTypeOf(event.data.delta).toEqualTypeOf<string>();
        },
        'turn.completed'(event, ctx) {
          expectTypeOf(event.data.result).toEqualTypeOf<unknown>();
          expectTypeOf(event.data.usage).toEqualTypeOf<TurnUsage | undefined>();
          expectTypeOf(event.data.cost).toEqualTypeOf<TurnCost | undefined>();
          expectTypeOf(ctx).toEqualTypeOf<SessionHookContext>();
          expectTypeOf(ctx.session.purpose).toEqualTypeOf<SessionPurpose>();
        },
        async 'turn.failed'(event) {
          expectTypeOf(event.data.message).toEqualTypeOf<string>();
          expectTypeOf(event.data.status).toEqualTypeOf<'error' | 'cancelled' | undefined>();
          expectTypeOf(event.data.error).toEqualTypeOf<AgentErrorInfo | undefined>();
        },
        'actions.requested'(event) {
          expectTypeOf(event.data.calls).toEqualTypeOf<readonly RequestedAction[]>();
          expectTypeOf(event.data.parentCallId).toEqualTypeOf<string | undefined>();
        },
        'actions.completed'(event) {
          expectTypeOf(event.data.results).toEqualTypeOf<readonly ActionResult[]>();
        },
        'action.result'(event) {
          expectTypeOf(event.data.isError).toEqualTypeOf<boolean>();
          expectTypeOf(event.data.stubbed).toEqualTypeOf<boolean | undefined>();
        },
        'action.tool_retry'(event) {
          expectTypeOf(event.data.attempt).toEqualTypeOf<number>();
          expectTypeOf(event.data.reason).toEqualTypeOf<string>();
        },
      },
    });
  });

  it('rule 147: "*" gets the union and switching on type narrows data', () => {
    defineHook({
      events: {
        '*': (event) => {
          expectTypeOf(event).toEqualTypeOf<SessionEvent>();
          expectTypeOf(event.type).toEqualTypeOf<SessionEventType>();
          if (event.type === 'turn.completed') expectTypeOf(event.data.usage).toEqualTypeOf<TurnUsage | undefined>();
          if (event.type === 'message.received') expectTypeOf(event.data).toEqualTypeOf<Readonly<{ readonly text: string }>>();
        },
      },
    });
  });

  it('rule 148: every event carries { type, index, sessionId, turnId?, at, data }', () => {
    expectTypeOf<SessionEvent<'turn.completed'>>().toHaveProperty('index').toEqualTypeOf<number>();
    expectTypeOf<SessionEvent>().toHaveProperty('sessionId').toEqualTypeOf<string>();
    expectTypeOf<SessionEvent>().toHaveProperty('turnId').toEqualTypeOf<string | undefined>();
    expectTypeOf<SessionEvent>().toHaveProperty('at').toEqualTypeOf<number>();
  });

  it('rule 171: the definition keeps its handlers, so a test can call them directly', () => {
    const hook = defineHook({ events: { 'turn.completed': async (event) => void event } });
    expectTypeOf(hook.events['turn.completed']).parameter(0).toEqualTypeOf<SessionEvent<'turn.completed'>>();
    expectTypeOf(hook.events['turn.completed']).toBeCallableWith({} as SessionEvent<'turn.completed'>, {} as SessionHookContext);
  });

  it('a key outside the vocabulary and a mistyped handler are type errors', () => {
    // @ts-expect-error 'turn.complete' is not an event type
    defineHook({ events: { 'turn.complete': () => {} } });
    defineHook({
      events: {
        // @ts-expect-error turn.completed data has no text
        'turn.completed': (event) => event.data.text,
      },
    });
  });

  it('the context carries no clients we do not have', () => {
    expectTypeOf<SessionHookContext['host']>().toHaveProperty('kv');
    expectTypeOf<SessionHookContext['host']>().toHaveProperty('files');
    expectTypeOf<keyof SessionHookContext['host']>().toEqualTypeOf<'kv' | 'files'>();
  });
});
