import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CliError } from './errors.js';
import { hasErrors, loadProject, mountedHooks } from './project.js';

const fixture = (name: string) => fileURLToPath(new URL(`../test-fixtures/${name}`, import.meta.url));

describe('rules 173-180: project discovery', () => {
  it('rules 173, 174, 175, 180: finds agents and hooks by path, subfolders included, skipping tests, specs and declarations', async () => {
    const project = await loadProject(fixture('valid'));
    expect(project.diagnostics).toEqual([]);
    expect(project.agents.map((a) => [a.name, a.file, a.script?.file])).toEqual([
      ['flaky', 'agents/flaky.ts', 'agents/flaky.script.json'],
      ['helper', 'agents/helper.ts', 'agents/helper.script.json'],
      ['triage', 'agents/support/triage.ts', undefined],
    ]);
    expect(project.agents[1]?.script?.steps).toHaveLength(2);
    // Files first (sorted by path), then the pack from helix.config.ts, mounted as <ns>__<name>, minus the disabled one.
    expect(project.hooks.map((h) => [h.name, h.file, h.events])).toEqual([
      ['audit/usage', 'hooks/audit/usage.ts', ['turn.completed', '*']],
      ['memory', 'hooks/memory.ts', ['turn.completed']],
      ['ops__pager', 'helix.config.ts', ['message.received']],
      ['ops__metrics', 'helix.config.ts', ['message.received']],
    ]);
    expect(mountedHooks(project).map((h) => h.name)).toEqual(['audit/usage', 'memory', 'ops__pager', 'ops__metrics']);
  });

  it('rules 176, 177, 178: reports every problem of a broken project at once', async () => {
    const project = await loadProject(fixture('broken'));
    expect(hasErrors(project)).toBe(true);
    expect(project.diagnostics.map((d) => [d.severity, d.code, d.file])).toEqual([
      ['error', 'agent_default_export', 'agents/not-agent.ts'],
      ['error', 'script_invalid', 'agents/ok.script.json'],
      ['error', 'hook_name_invalid', 'hooks/bad__name.ts'],
      ['warning', 'hook_empty', 'hooks/empty.ts'],
      ['error', 'hook_default_export', 'hooks/no-default.ts'],
      ['error', 'hook_default_export', 'hooks/plain.ts'],
      ['error', 'module_load_failed', 'hooks/typo.ts'],
    ]);
    const byFile = Object.fromEntries(project.diagnostics.map((d) => [d.file, d.message]));
    expect(byFile['hooks/bad__name.ts']).toContain('cannot contain "__"');
    expect(byFile['hooks/empty.ts']).toContain('empty events map');
    expect(byFile['hooks/no-default.ts']).toBe('the default export must be defineHook(...), got no default export');
    expect(byFile['hooks/plain.ts']).toBe('the default export must be defineHook(...), got a plain object');
    expect(byFile['hooks/typo.ts']).toContain('"turn.complete" is not an event type');
    expect(byFile['agents/not-agent.ts']).toBe('the default export must be defineAgent(...), got a plain object');
    // What is valid still loads.
    expect(project.agents.map((a) => a.name)).toEqual(['ok']);
    expect(project.hooks.map((h) => h.name)).toEqual(['fine']);
  });

  it('a missing folder is a CliError with exit code 66', async () => {
    const error = await loadProject(fixture('does-not-exist')).catch((e: unknown) => e);
    expect(CliError.isInstance(error) && error.code).toBe('cli_missing_folder');
    expect((error as CliError).exitCode).toBe(66);
  });
});
