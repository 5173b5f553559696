import { defineHook } from '@helix-agents/sdk/hooks';

/** Journals every reply, and fails on purpose when the user asks for it. */
export default defineHook({
  events: {
    async 'turn.completed'(event, ctx) {
      await ctx.host.files.append('journal.md', `${String(event.data.result)}\n`);
      if (String(event.data.result).includes('explode')) throw new Error('journal exploded on purpose');
    },
  },
});
