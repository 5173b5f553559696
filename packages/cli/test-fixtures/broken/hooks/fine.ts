import { defineHook } from '@helix-agents/sdk/hooks';

/** The one good hook of the broken project. */
export default defineHook({ events: { 'turn.failed': () => {} } });
