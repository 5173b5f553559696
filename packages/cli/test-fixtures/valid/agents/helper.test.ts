// Discovery must skip tests: importing this file would fail discovery.
throw new Error('agents/helper.test.ts must not be loaded');
