// Discovery must skip specs too.
throw new Error('hooks/audit/usage.spec.ts must not be loaded');
