// Dry runs (docs/rules.md, rule 156): a side-effecting tool is answered without running.
import type { ToolDefinition } from '../define.js';
import type { ToolCall } from '../messages.js';
import type { WriteScope } from './hook-dispatch.js';
import type { Run } from './run.js';
import { toolContext } from './tool-context.js';

/** The standard stub a dry run answers a side-effecting tool without `dryRun` with. */
export interface DryRunStub {
  readonly stubbed: true;
  readonly tool: string;
  readonly message: string;
}

/** The standard stub result for `toolName`. */
export function dryRunStub(toolName: string): DryRunStub {
  return { stubbed: true, tool: toolName, message: `Dry run: "${toolName}" has side effects and was not run.` };
}

/** True when this run answers `tool` without running it: a dry run, and a `sideEffects: true` tool (sub-agent tools run their child). */
export function isStubbed(run: Run, tool: ToolDefinition): boolean {
  return tool.sideEffects === true && tool.subAgent === undefined && run.setup.dryRun === true;
}

/**
 * A stubbed call's result: the tool's own `dryRun(input, ctx)` (checked like a result: its outputSchema
 * applies), else the standard stub (`checked: false`: no outputSchema to satisfy).
 */
export async function dryRunResult(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope): Promise<{ readonly result: unknown; readonly checked: boolean }> {
  if (!tool.dryRun) return { result: dryRunStub(tool.name), checked: false };
  return { result: await tool.dryRun(call.arguments, toolContext(run, tool, call.id, scope)), checked: true };
}
