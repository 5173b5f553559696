// The agent of the MCP crash test, shared by the child that crashes and the process that recovers.
import { defineAgent, type ToolDefinition } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** The lease of a crash-test run: short, so the recovering process can claim the dead run soon. */
export const CRASH_LEASE_MS = 300;

/** Arguments of the one call of the crash test, per server tool. */
export const CRASH_ARGS: Readonly<Record<string, Record<string, unknown>>> = { write_note: { path: 'once.txt', body: 'hi' }, echo: { text: 'once' } };

/**
 * The agent: its first step calls `serverTool` once, its second answers in text. The recovering process
 * (`phase` recover) starts its script at the second step, because the first step's reply is replayed
 * from the journal when the call is side-effecting, and asked again when it is not.
 */
export function crashAgent(tools: readonly ToolDefinition[], serverTool: string, phase: 'first' | 'recover', replayed = true) {
  const call = { toolCalls: [{ name: `fx__${serverTool}`, args: CRASH_ARGS[serverTool] ?? {}, id: 'call-1' }] };
  const steps = phase === 'first' || !replayed ? [call, { text: 'done' }] : [{ text: 'done' }];
  return defineAgent({ name: 'mcp-crash', llmConfig: { model: createScriptedModel(steps) }, tools });
}
