import { defineHook } from '@helix-agents/sdk/hooks';

/** No handlers: skipped with a warning. */
export default defineHook({ events: {} });
