import { describe, expect, it } from 'vitest';
import {
  AgentError,
  agentErrorFromInfo,
  ConfigError,
  ERROR_CODES,
  HookError,
  isAgentErrorInfo,
  MaxStepsError,
  ProviderError,
  RunSupersededError,
  toAgentErrorInfo,
  ToolError,
} from '../index.js';

describe('errors carry AgentErrorInfo (rules 223-230)', () => {
  it('rule 223 / rule 225: every code has a layer, severity and retryable flag from the taxonomy', () => {
    for (const [code, defaults] of Object.entries(ERROR_CODES)) {
      const info = new AgentError(code, `message for ${code}`).info;
      expect(isAgentErrorInfo(info)).toBe(true);
      expect(info).toMatchObject({ code, layer: defaults.layer, severity: defaults.severity, retryable: defaults.retryable });
    }
  });

  it('rule 226 / C14: rate limits are retryable errors, bad keys are fatal and not retryable', () => {
    expect(new ProviderError('provider_rate_limited', 'slow down').info).toMatchObject({ layer: 'provider', severity: 'error', retryable: true });
    expect(new ProviderError('provider_auth', 'bad key').info).toMatchObject({ layer: 'provider', severity: 'fatal', retryable: false });
    expect(new ProviderError('provider_timeout', 'late').info).toMatchObject({ severity: 'error', retryable: true });
  });

  it('rule 227 / rule 228 / rule 230: tool, run and hook codes have their layers', () => {
    expect(new ToolError('tool_not_found', 'x').layer).toBe('tool');
    expect(new MaxStepsError(3).info).toMatchObject({ code: 'run_max_steps', layer: 'run', severity: 'fatal', details: { maxSteps: 3 } });
    expect(new HookError('hook_failed', 'x').info).toMatchObject({ layer: 'hook', severity: 'fatal' });
  });

  it('isInstance() works across duplicated package copies (a Symbol.for marker, not instanceof)', () => {
    const foreign = Object.assign(Object.create(Error.prototype) as object, { [Symbol.for('helix-agents.error')]: true, info: { code: 'x' } });
    expect(AgentError.isInstance(foreign)).toBe(true);
    expect(AgentError.isInstance(new Error('plain'))).toBe(false);
    expect(RunSupersededError.isInstance(new RunSupersededError('s', 'r1', 'r2'))).toBe(true);
    expect(RunSupersededError.isInstance(new ConfigError('x'))).toBe(false);
    expect(ConfigError.isInstance(new ConfigError('x'))).toBe(true);
  });

  it('rule 224: toAgentErrorInfo bounds messages and never leaks a stack; an empty message becomes a sentence', () => {
    const long = toAgentErrorInfo(new Error('x'.repeat(1000)));
    expect(long.message.length).toBeLessThan(400);
    expect(long.code).toBe('run_internal_error');
    expect(toAgentErrorInfo(new Error('   ')).message).toBe('Something went wrong.');
    expect(JSON.stringify(toAgentErrorInfo(new TypeError('boom')))).not.toContain('at ');
  });

  it('agentErrorFromInfo rebuilds the right class from recorded info', () => {
    expect(ProviderError.isInstance(agentErrorFromInfo(new ProviderError('provider_auth', 'x').info))).toBe(true);
    expect(ToolError.isInstance(agentErrorFromInfo(new ToolError('tool_failed', 'x').info))).toBe(true);
    expect(JSON.parse(JSON.stringify(new ToolError('tool_failed', 'x')))).toMatchObject({ code: 'tool_failed', layer: 'tool' });
  });
});
