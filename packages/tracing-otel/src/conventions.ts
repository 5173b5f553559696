/**
 * Attribute names this package writes. The `gen_ai.*` names are copied from the OpenTelemetry GenAI
 * semantic conventions instead of imported: `@opentelemetry/semantic-conventions` marks them
 * experimental (they may change in any minor release) and deprecated there (they moved to the
 * semantic-conventions-genai repository), so a pinned copy keeps our spans stable.
 */

/** `gen_ai.operation.name`: `invoke_agent`, `chat` or `execute_tool` on our spans. */
export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
/** `gen_ai.provider.name`: the model provider, normalised to the convention's well-known values. */
export const GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
/** `gen_ai.agent.name`: the agent's name. */
export const GEN_AI_AGENT_NAME = 'gen_ai.agent.name';
/** `gen_ai.agent.description`: the agent's description, when it has one. */
export const GEN_AI_AGENT_DESCRIPTION = 'gen_ai.agent.description';
/** `gen_ai.conversation.id`: the helix session id. */
export const GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';
/** `gen_ai.request.model`: the model id the agent asked for. */
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
/** `gen_ai.request.temperature`. */
export const GEN_AI_REQUEST_TEMPERATURE = 'gen_ai.request.temperature';
/** `gen_ai.request.max_tokens`. */
export const GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens';
/** `gen_ai.request.top_p`. */
export const GEN_AI_REQUEST_TOP_P = 'gen_ai.request.top_p';
/** `gen_ai.request.top_k`. */
export const GEN_AI_REQUEST_TOP_K = 'gen_ai.request.top_k';
/** `gen_ai.request.presence_penalty`. */
export const GEN_AI_REQUEST_PRESENCE_PENALTY = 'gen_ai.request.presence_penalty';
/** `gen_ai.request.frequency_penalty`. */
export const GEN_AI_REQUEST_FREQUENCY_PENALTY = 'gen_ai.request.frequency_penalty';
/** `gen_ai.request.seed`. */
export const GEN_AI_REQUEST_SEED = 'gen_ai.request.seed';
/** `gen_ai.request.stop_sequences`. */
export const GEN_AI_REQUEST_STOP_SEQUENCES = 'gen_ai.request.stop_sequences';
/** `gen_ai.response.model`: the model id the provider reported. */
export const GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
/** `gen_ai.response.id`. */
export const GEN_AI_RESPONSE_ID = 'gen_ai.response.id';
/** `gen_ai.response.finish_reasons`. */
export const GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons';
/** `gen_ai.usage.input_tokens`: prompt tokens, cached ones included (as the convention asks). */
export const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
/** `gen_ai.usage.output_tokens`. */
export const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
/** `gen_ai.usage.cache_read.input_tokens`: prompt tokens served from the provider's cache. */
export const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens';
/** `gen_ai.usage.cache_creation.input_tokens`: prompt tokens written to the provider's cache. */
export const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = 'gen_ai.usage.cache_creation.input_tokens';
/** `gen_ai.usage.reasoning.output_tokens`. */
export const GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = 'gen_ai.usage.reasoning.output_tokens';
/** `gen_ai.tool.name`. */
export const GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
/** `gen_ai.tool.call.id`: the model's tool call id. */
export const GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
/** `gen_ai.tool.description`. */
export const GEN_AI_TOOL_DESCRIPTION = 'gen_ai.tool.description';
/** `gen_ai.tool.call.arguments` (content: only with `captureContent`). */
export const GEN_AI_TOOL_CALL_ARGUMENTS = 'gen_ai.tool.call.arguments';
/** `gen_ai.tool.call.result` (content: only with `captureContent`). */
export const GEN_AI_TOOL_CALL_RESULT = 'gen_ai.tool.call.result';
/** `gen_ai.input.messages` (content: only with `captureContent`). */
export const GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages';
/** `gen_ai.output.messages` (content: only with `captureContent`). */
export const GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages';
/** `gen_ai.system_instructions` (content: only with `captureContent`). */
export const GEN_AI_SYSTEM_INSTRUCTIONS = 'gen_ai.system_instructions';
/** `error.type` (stable): our error code, e.g. `provider_rate_limited`, `tool_failed`. */
export const ERROR_TYPE = 'error.type';
/** `user.id`: the `userId` execution option. */
export const USER_ID = 'user.id';
/** `session.id`: the helix session id (also `gen_ai.conversation.id`). */
export const SESSION_ID = 'session.id';

/** `gen_ai.operation.name` values of our spans. */
export const OPERATION = Object.freeze({ invokeAgent: 'invoke_agent', chat: 'chat', executeTool: 'execute_tool' } as const);

// helix-agents' own attributes and events: what the GenAI conventions have no name for.

/** `helix.run.id`: the run a span belongs to. */
export const HELIX_RUN_ID = 'helix.run.id';
/** `helix.run.status`: `completed`, `failed`, `interrupted`, `superseded` or `suspended`. */
export const HELIX_RUN_STATUS = 'helix.run.status';
/** `helix.run.exit_reason`: how a completed run finished (`finish_tool`, `finish_with`, `text`, `max_steps`). */
export const HELIX_RUN_EXIT_REASON = 'helix.run.exit_reason';
/** `helix.run.step_count`: LLM steps the run completed. */
export const HELIX_RUN_STEP_COUNT = 'helix.run.step_count';
/** `helix.run.start_signal`: how the run began (`start`, `resume`, `retry`, or `unknown` for a run recovered mid-way). */
export const HELIX_RUN_START_SIGNAL = 'helix.run.start_signal';
/** `helix.run.attempt`: the execution attempt of the run (1, then +1 per recovery by another process). */
export const HELIX_RUN_ATTEMPT = 'helix.run.attempt';
/** `helix.run.owed_start`: a resumed or retried run ran the turn's start work (onAgentStart with startSignal false). */
export const HELIX_RUN_OWED_START = 'helix.run.owed_start';
/** `helix.run.previous_id`: the run a resumed run continues (also a span link). */
export const HELIX_RUN_PREVIOUS_ID = 'helix.run.previous_id';
/** `helix.run.retried_id`: the failed run a retry re-runs (also a span link). */
export const HELIX_RUN_RETRIED_ID = 'helix.run.retried_id';
/** `helix.run.checkpoint_id`: the checkpoint a resumed or retried run restored. */
export const HELIX_RUN_CHECKPOINT_ID = 'helix.run.checkpoint_id';
/** `helix.run.current_id`, on a supersede event: the run that took over the session. */
export const HELIX_RUN_CURRENT_ID = 'helix.run.current_id';
/** `helix.suspend.reason`, on a suspension event: `client_tool`, `awaiting_children` or `step_partial`. */
export const HELIX_SUSPEND_REASON = 'helix.suspend.reason';
/** `helix.suspend.pending_tool_call_ids`, on a suspension event: the calls left waiting. */
export const HELIX_PENDING_TOOL_CALL_IDS = 'helix.suspend.pending_tool_call_ids';
/** `helix.suspend.awaited_session_ids`, on a suspension event: the child sessions awaited. */
export const HELIX_AWAITED_SESSION_IDS = 'helix.suspend.awaited_session_ids';
/** `helix.session.parent_id`: the parent session of a sub-agent run. */
export const HELIX_PARENT_SESSION_ID = 'helix.session.parent_id';
/** On a sub-agent's run span: the parent's tool call that started it (the span it hangs under). */
export const HELIX_PARENT_TOOL_CALL_ID = 'helix.tool_call.parent_id';
/** `helix.tags`: the `tags` execution option. */
export const HELIX_TAGS = 'helix.tags';
/** Prefix of one attribute per `metadata` execution option entry (`helix.metadata.feature`). */
export const HELIX_METADATA_PREFIX = 'helix.metadata.';
/** `helix.step.index`: 0-based step of a model call or tool call. */
export const HELIX_STEP_INDEX = 'helix.step.index';
/** `helix.llm.attempt`: 1-based attempt of a step's model call. */
export const HELIX_LLM_ATTEMPT = 'helix.llm.attempt';
/** `helix.llm.plan`: what the loop does with the reply (`tool_calls`, `finish`, `text`, `nudge`, `retry`, `fail`). */
export const HELIX_LLM_PLAN = 'helix.llm.plan';
/** `helix.llm.retry_delay_ms`: the backoff before the next attempt of a retried call. */
export const HELIX_LLM_RETRY_DELAY_MS = 'helix.llm.retry_delay_ms';
/** `helix.error.retryable`: whether the recorded error is retryable. */
export const HELIX_ERROR_RETRYABLE = 'helix.error.retryable';
/** `helix.error.layer`: who is to blame (`provider`, `tool`, `run`, `hook`, ...). */
export const HELIX_ERROR_LAYER = 'helix.error.layer';
/** `helix.tool.blocked`: a beforeTool hook (or a rejected approval) refused the call; it did not run. */
export const HELIX_TOOL_BLOCKED = 'helix.tool.blocked';
/** `helix.tool.pending`: the call was left waiting when its run suspended (a client tool, an approval, children). */
export const HELIX_TOOL_PENDING = 'helix.tool.pending';
/** `helix.tool.finish_with`: the tool ends the run with its result. */
export const HELIX_TOOL_FINISH_WITH = 'helix.tool.finish_with';
/** `helix.hook.point`, on a decision event: the hook that decided. */
export const HELIX_HOOK_POINT = 'helix.hook.point';
/** `helix.hook.decision`, on a decision event: `block`, `rewrite`, `continue`, ... */
export const HELIX_HOOK_DECISION = 'helix.hook.decision';
/** `helix.hook.reason`, on a decision event. */
export const HELIX_HOOK_REASON = 'helix.hook.reason';
/** `helix.hook.source`, on a decision event: the hook set or guard that decided. */
export const HELIX_HOOK_SOURCE = 'helix.hook.source';
/** `helix.hook.duration_ms`, on a decision event: how long the deciding hook took. */
export const HELIX_HOOK_DURATION_MS = 'helix.hook.duration_ms';
/** `helix.hook.policy`, on an `error` decision event: the error policy that handled the hook's failure. */
export const HELIX_HOOK_POLICY = 'helix.hook.policy';
/** `helix.span.abandoned`: the span was closed by the tracer because its closing hook never came. */
export const HELIX_SPAN_ABANDONED = 'helix.span.abandoned';

/** Span event: a hook steered the run (block, rewrite, continue). */
export const EVENT_HOOK_DECISION = 'helix.hook.decision';
/** Span event: a tool call was refused before execution (unknown tool, invalid arguments). */
export const EVENT_TOOL_CALL_REJECTED = 'helix.tool_call.rejected';
/** Span event: another run took over the session. */
export const EVENT_RUN_SUPERSEDED = 'helix.run.superseded';
/** Span event: the run reached a suspension boundary (rule 115); the run span ends with it. */
export const EVENT_RUN_SUSPENDED = 'helix.run.suspended';
/** Span event: the run resumes a suspended run (rule 115); the run span links to the previous run's. */
export const EVENT_RUN_RESUMED = 'helix.run.resumed';
/** Span event: the run is a retry of a failed run; the run span links to the retried run's. */
export const EVENT_RUN_RETRY = 'helix.run.retry';
/** Span event: the run was interrupted (stopped). */
export const EVENT_RUN_INTERRUPTED = 'helix.run.interrupted';
/** Name of the span that records a terminal hook arriving after the run span ended (e.g. a failed terminal commit). */
export const SPAN_RUN_OUTCOME = 'helix.run.outcome';

// AI SDK provider ids (`openai.chat`, `anthropic.messages`, `google.vertex.chat`, ...) → GenAI well-known values.
const PROVIDERS: readonly (readonly [prefix: string, name: string])[] = [
  ['google.vertex', 'gcp.vertex_ai'],
  ['vertex', 'gcp.vertex_ai'],
  ['google', 'gcp.gemini'],
  ['azure', 'azure.ai.openai'],
  ['amazon-bedrock', 'aws.bedrock'],
  ['bedrock', 'aws.bedrock'],
  ['openai', 'openai'],
  ['anthropic', 'anthropic'],
  ['mistral', 'mistral_ai'],
  ['xai', 'x_ai'],
  ['groq', 'groq'],
  ['deepseek', 'deepseek'],
  ['cohere', 'cohere'],
  ['perplexity', 'perplexity'],
  ['moonshotai', 'moonshot_ai'],
];

const providerCache = new Map<string, string>();

/**
 * Maps an AI SDK provider id to `gen_ai.provider.name`: a well-known value when one applies, else the
 * id's first segment (`my-proxy.chat` → `my-proxy`), as the convention allows custom values.
 */
export function genAiProviderName(provider: string): string {
  let name = providerCache.get(provider);
  if (name === undefined) {
    const lower = provider.toLowerCase();
    const known = PROVIDERS.find(([prefix]) => lower === prefix || lower.startsWith(`${prefix}.`) || lower.startsWith(`${prefix}-`));
    name = known ? known[1] : (lower.split('.')[0] ?? lower);
    // Provider ids are few; the cap only guards against a caller inventing one per call.
    if (providerCache.size < 256) providerCache.set(provider, name);
  }
  return name;
}
