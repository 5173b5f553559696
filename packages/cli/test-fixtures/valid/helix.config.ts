import { defineHook, mountHooks } from '@helix-agents/sdk/hooks';

const noop = defineHook({ events: { 'message.received': () => {} } });

/** A pack mounted as ops__*, with one of its hooks disabled. */
export const extensions = [mountHooks('ops', { pager: noop, metrics: noop, noisy: noop }).disableHook('noisy')];
