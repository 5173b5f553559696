import { defineHook } from '@helix-agents/sdk/hooks';

/** Valid, but its file name contains "__". */
export default defineHook({ events: { '*': () => {} } });
