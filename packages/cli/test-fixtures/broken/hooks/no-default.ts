import { defineHook } from '@helix-agents/sdk/hooks';

/** A named export only. */
export const hook = defineHook({ events: { '*': () => {} } });
