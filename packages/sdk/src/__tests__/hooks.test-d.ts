import type { Draft as ImmerDraft } from 'immer';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  composeHookManagers,
  defineAgent,
  type AgentHooks,
  type HookContext,
  type SessionEvent,
  type SessionEventType,
  type SessionHookContext,
  type ToolDefinition,
} from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { incrementTool } from './harness.js';

interface MyState {
  counter: number;
}
interface MyOutput {
  result: string;
}

describe('rule 6: AgentHooks<TState, TOutput> types payloads and context', () => {
  it('rule 6: payload.output is TOutput, getState() returns TState and the updateState draft is Draft<TState>', () => {
    const hooks: AgentHooks<MyState, MyOutput> = {
      onAgentComplete: (payload, ctx) => {
        expectTypeOf(payload.output).toEqualTypeOf<MyOutput>();
        expectTypeOf(ctx.getState()).toEqualTypeOf<MyState>();
        expectTypeOf(payload.finalState).toEqualTypeOf<MyState>();
        ctx.updateState((draft) => {
          expectTypeOf(draft).toEqualTypeOf<ImmerDraft<MyState>>();
          draft.counter++;
        });
      },
      onStateChange: (payload) => {
        expectTypeOf(payload.newState).toEqualTypeOf<MyState>();
      },
    };
    expectTypeOf(hooks.onAgentComplete).parameter(1).toEqualTypeOf<HookContext<MyState, MyOutput>>();
  });

  it('defineAgent infers state and output from its schemas into its hooks', () => {
    defineAgent({
      name: 'typed',
      stateSchema: z.object({ searchCount: z.number().default(0) }),
      outputSchema: z.object({ summary: z.string() }),
      llmConfig: { model: createScriptedModel([]) },
      hooks: {
        onAgentComplete: (payload, ctx) => {
          expectTypeOf(payload.output).toEqualTypeOf<{ summary: string }>();
          expectTypeOf(ctx.getState().searchCount).toEqualTypeOf<number>();
        },
      },
    });
  });

  it('untyped hook sets (AgentHooks) compose with typed ones', () => {
    const logging: AgentHooks = { onAgentStart: () => {} };
    const typed: AgentHooks<MyState, MyOutput> = { onAgentComplete: () => {} };
    composeHookManagers<MyState, MyOutput>(logging, typed);
    // @ts-expect-error: a hook point that does not exist is a type error.
    const wrong: AgentHooks = { onAgentBoot: () => {} };
    void wrong;
  });

  it('a typed tool is assignable to the tools of an agent, and its execute input is inferred', () => {
    expectTypeOf(incrementTool).toMatchTypeOf<ToolDefinition>();
    expectTypeOf(incrementTool.execute).parameter(0).toEqualTypeOf<{ by: number }>();
  });
});

describe('the subscriber types at the SDK root', () => {
  it('rule 158: SessionEvent, SessionEventType and SessionHookContext are exported from the SDK root', () => {
    expectTypeOf<SessionEvent['type']>().toEqualTypeOf<SessionEventType>();
    expectTypeOf<Extract<SessionEvent, { type: 'message.received' }>['data']>().toEqualTypeOf<{ readonly text: string }>();
    expectTypeOf<SessionHookContext['session']['id']>().toEqualTypeOf<string>();
  });
});
