import { defineHook } from '@helix-agents/sdk/hooks';

/** A key outside the vocabulary: defineHook throws when the module loads. */
// @ts-expect-error 'turn.complete' is not an event type
export default defineHook({ events: { 'turn.complete': () => {} } });
