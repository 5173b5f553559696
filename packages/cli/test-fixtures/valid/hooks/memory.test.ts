// Discovery must skip tests next to hooks.
throw new Error('hooks/memory.test.ts must not be loaded');
