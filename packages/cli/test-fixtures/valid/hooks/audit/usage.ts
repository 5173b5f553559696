import { defineHook } from '@helix-agents/sdk/hooks';

/** Counts tokens in kv. */
export default defineHook({
  events: {
    async 'turn.completed'(event, ctx) {
      const total = (await ctx.host.kv.get<number>('tokens')) ?? 0;
      await ctx.host.kv.set('tokens', total + (event.data.usage?.outputTokens ?? 0));
    },
    '*': () => {},
  },
});
