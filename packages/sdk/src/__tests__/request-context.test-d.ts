import { describe, expectTypeOf, it } from 'vitest';
import { InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, type AgentHooks, type HookContext, type RunTokenUsage, type ToolContext } from '../index.js';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { counterAgent, type Counter } from './harness.js';

interface Db {
  query(sql: string): Promise<unknown[]>;
}
interface RequestResources {
  readonly db: Db;
  readonly userName: string;
}

describe('rule 202: the hookContext is typed through the hook types', () => {
  it('AgentHooks<TState, TOutput, THookContext> types ctx.hookContext in every handler', () => {
    const hooks: AgentHooks<Counter, { answer: string }, RequestResources> = {
      beforeTool: (_payload, ctx) => {
        expectTypeOf(ctx.hookContext).toEqualTypeOf<RequestResources | undefined>();
      },
      onAgentSuspended: (ctx) => {
        expectTypeOf(ctx.hookContext).toEqualTypeOf<RequestResources | undefined>();
      },
      onThinking: (_content, _done, ctx) => {
        expectTypeOf(ctx.hookContext).toEqualTypeOf<RequestResources | undefined>();
      },
    };
    expectTypeOf(hooks.afterTool).parameter(1).toEqualTypeOf<HookContext<Counter, { answer: string }, RequestResources>>();
  });

  it('execute() infers THookContext from hookContext and checks the hooks against it', () => {
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
    const agent = counterAgent([]);
    const db: Db = { query: () => Promise.resolve([]) };
    void executor.execute(agent, 'go', {
      hookContext: { db, userName: 'ann' },
      hooks: {
        afterLLMCall: (_payload, ctx) => {
          expectTypeOf(ctx.hookContext).toEqualTypeOf<{ db: Db; userName: string } | undefined>();
        },
      },
    });
  });

  it('a hook context without a THookContext reads unknown; tools read ToolContext["hookContext"]', () => {
    expectTypeOf<HookContext['hookContext']>().toEqualTypeOf<unknown>();
    expectTypeOf<ToolContext<RequestResources>['hookContext']>().toEqualTypeOf<RequestResources | undefined>();
  });
});

describe('rule 203: run metadata on the hook context', () => {
  it('tokenUsage and toolCallCounts are typed', () => {
    expectTypeOf<HookContext['tokenUsage']>().toEqualTypeOf<RunTokenUsage>();
    expectTypeOf<HookContext['toolCallCounts']>().toEqualTypeOf<Readonly<Record<string, number>>>();
    expectTypeOf<RunTokenUsage['totalTokens']>().toBeNumber();
  });
});
