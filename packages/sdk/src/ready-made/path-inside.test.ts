import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContainment } from '../__tests__/containment.js';
import { pathInside } from './tool-guard.js';

// Issue 14 item 9: a relative path is resolved the way a tool opens it (against the working directory),
// and containment is checked after resolving symlinks.
describe('pathInside resolves like the tools that open the path', () => {
  let tmp: string;
  let workspace: string;
  let outside: string;

  beforeAll(() => {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'helix-path-inside-')));
    workspace = join(tmp, 'workspace');
    outside = join(tmp, 'outside');
    mkdirSync(join(workspace, 'src'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'x');
    symlinkSync(outside, join(workspace, 'escape'));
    symlinkSync(join(outside, 'not-yet.txt'), join(workspace, 'dangling'));
    symlinkSync(join(workspace, 'src'), join(workspace, 'inner-link'));
    symlinkSync(join(workspace, 'loop-b'), join(workspace, 'loop-a'));
    symlinkSync(join(workspace, 'loop-a'), join(workspace, 'loop-b'));
    symlinkSync(workspace, join(tmp, 'workspace-link'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('a relative value is resolved against process.cwd(), not against the guarded folder', () => {
    const rel = relative(process.cwd(), workspace);
    const inside = pathInside(rel);
    // A tool writing 'x' writes ./x (the working directory), which is outside the workspace.
    expect(inside('x')).toBe(false);
    expect(inside(join(rel, 'x'))).toBe(true);
    expect(inside(join(workspace, 'src', 'a.ts'))).toBe(true);
  });

  it('a configurable base (cwd) resolves relative values the same way', () => {
    const inside = pathInside(workspace, { cwd: join(workspace, 'src') });
    expect(inside('a.ts')).toBe(true);
    expect(inside('../b.ts')).toBe(true);
    expect(inside('../../outside/secret.txt')).toBe(false);
    expect(pathInside(workspace, { cwd: tmp })('x')).toBe(false);
    expect(pathInside(workspace, { cwd: tmp })('workspace/x')).toBe(true);
  });

  it('.. and absolute paths cannot escape', () => {
    const inside = pathInside(workspace, { cwd: workspace });
    expect(inside('src/../../outside/secret.txt')).toBe(false);
    expect(inside('..')).toBe(false);
    expect(inside(join(outside, 'secret.txt'))).toBe(false);
    expect(inside('/etc/passwd')).toBe(false);
    expect(inside(`${workspace}X/a`)).toBe(false);
    expect(inside('.')).toBe(true);
    expect(inside('new/dir/file.txt')).toBe(true);
  });

  it('symlinks are resolved: a link pointing out is outside, a link pointing in is inside', () => {
    // A dangling link (writing to it creates the file where it points) is outside; a loop cannot be
    // resolved, so it is refused.
    expectContainment(pathInside(workspace, { cwd: workspace }), ['inner-link/a.ts'], ['escape/secret.txt', 'escape', 'escape/new-file.txt', 'dangling', 'loop-a']);
  });

  it('a guarded folder given through a symlink guards its real location', () => {
    const inside = pathInside(join(tmp, 'workspace-link'), { cwd: tmp });
    expect(inside('workspace/src/a.ts')).toBe(true);
    expect(inside('workspace-link/src/a.ts')).toBe(true);
    expect(inside('outside/secret.txt')).toBe(false);
  });
});
