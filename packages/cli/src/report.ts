import type { Output } from './log.js';
import type { Project } from './project.js';

/** Writes the diagnostics as `error   agents/x.ts: message` lines; returns the error and warning counts. */
export function printDiagnostics(project: Project, out: Output): { readonly errors: number; readonly warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const d of project.diagnostics) {
    if (d.severity === 'error') errors++;
    else warnings++;
    out.write(`${d.severity.padEnd(7)} ${d.file === undefined ? '' : `${d.file}: `}${d.message}\n`);
  }
  return { errors, warnings };
}

/** `helix info --json`: the agents with the hooks that fire for them, the hooks, and the diagnostics. */
export function projectInfo(project: Project): Record<string, unknown> {
  const hookNames = project.hooks.map((h) => h.name);
  return {
    dir: project.dir,
    agents: project.agents.map((a) => ({
      name: a.name,
      file: a.file,
      ...(a.agent.description === undefined ? {} : { description: a.agent.description }),
      tools: a.agent.tools.map((t) => t.name),
      script: a.script?.file ?? null,
      // Project hooks subscribe to every session of every agent of the project.
      hooks: hookNames,
    })),
    hooks: project.hooks.map((h) => ({ name: h.name, file: h.file, events: h.events })),
    diagnostics: project.diagnostics,
  };
}

/** The human form of `helix info`. */
export function printInfo(project: Project, out: Output): void {
  out.write(`${project.dir}\n`);
  for (const agent of project.agents) {
    out.write(`agent ${agent.name} (${agent.file})${agent.agent.description ? `: ${agent.agent.description}` : ''}\n`);
    out.write(`  tools: ${agent.agent.tools.map((t) => t.name).join(', ') || 'none'}\n`);
    out.write(`  script: ${agent.script?.file ?? 'none (default script)'}\n`);
    out.write(`  hooks: ${project.hooks.map((h) => h.name).join(', ') || 'none'}\n`);
  }
  for (const hook of project.hooks) out.write(`hook ${hook.name} (${hook.file}): ${hook.events.join(', ')}\n`);
}
