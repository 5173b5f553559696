import { describe, expect, it } from 'vitest';
import { runLangfuseExample } from './tracing-langfuse.js';
import { runOtelExample } from './tracing-otel.js';

// No provider, OTLP or Langfuse settings: the examples play their scripts and keep their traces local.
const localEnv: NodeJS.ProcessEnv = {};

describe('tracing examples run on the scripted model', () => {
  it('the OpenTelemetry example prints the GenAI span tree of the research agent', async () => {
    let out = '';
    const { result, spans } = await runOtelExample((t) => (out += t), localEnv);
    expect(result.status).toBe('completed');
    expect(out).toContain('invoke_agent research-agent');
    expect(out).toMatch(/\n {2}chat gpt-4o-mini|\n {2}chat scripted-model/);
    expect(out).toContain('gen_ai.conversation.id=conversation-456');
    expect(spans.filter((s) => s.name === 'execute_tool search')).toHaveLength(3);
    expect(spans.filter((s) => s.name.startsWith('chat '))).toHaveLength(3);
    const root = spans.find((s) => s.name === 'invoke_agent research-agent')!;
    expect(root.attributes).toMatchObject({ 'user.id': 'user-123', 'helix.tags': ['research'], 'helix.metadata.feature': 'chat', 'helix.run.status': 'completed' });
  });

  it('the Langfuse example (the spec example) sends one trace with its generations and tool observations to the local stand-in', async () => {
    let out = '';
    const { result, received } = await runLangfuseExample((t) => (out += t), localEnv);
    expect(result.status).toBe('completed');
    expect(out).toContain('trace "my-agent" user=user-123 session=conversation-456 tags=["production","premium"] release=1.0.0');
    expect(new Set(received.map((o) => o.traceId)).size).toBe(1);
    expect(received.filter((o) => o.type === 'agent')).toHaveLength(1);
    expect(received.filter((o) => o.type === 'generation')).toHaveLength(3);
    expect(received.filter((o) => o.type === 'tool')).toHaveLength(3);
    expect(out).toMatch(/generation +chat \S+ {2}usage=\{"input":212,"output":31,"total":243\}/);
  });
});
