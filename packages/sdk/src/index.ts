/** @helix-agents/sdk: agents, tools, the run loop, hooks, in-memory stores, errors and stream chunks. */
export * from './errors.js';
export * from './messages.js';
export * from './llm.js';
// Stream chunks and the stream port; the writer side lives in @helix-agents/sdk/store.
export { isTerminalChunk } from './stream.js';
export type {
  ActionsCompletedChunk,
  ActionsRequestedChunk,
  ApprovalDecisionInfo,
  ChunkBase,
  CustomChunk,
  EndChunk,
  ErrorChunk,
  HookDecision,
  HookDecisionChunk,
  RunStartedChunk,
  RunUsageSummary,
  StartSignalKind,
  StatePatch,
  StatePatchChunk,
  StepStartChunk,
  StreamChunk,
  StreamChunkType,
  StreamManager,
  StreamReadOptions,
  SubAgentChunk,
  SuspendedChunk,
  TextDeltaChunk,
  ReasoningDeltaChunk,
  ToolApprovalRequestChunk,
  ToolEndChunk,
  ToolRetryChunk,
  ToolStartChunk,
  WarningChunk,
} from './stream.js';
// The records the runtime returns and the state port; store-implementer records live in @helix-agents/sdk/store.
export { GENESIS_CHECKPOINT } from './store.js';
export type { CheckpointInfo, PendingCall, RunOptionsRecord, RunRecord, RunStatus, SessionSnapshot, StateStore, StopRequest, SuspensionReason, SuspensionRecord, TurnRecord } from './store.js';
// What stores keep of finished work (the same policy for every store).
export type { Prunable, PruneReport, RetentionPolicy } from './store.js';
export * from './usage.js';
export * from './define.js';
export { checkSchema, isAISDKSchema, toolJSONSchema } from './tool-schema.js';
export type { AISDKSchema, AISDKValidation, InferToolSchema, SchemaCheck, SchemaIssue, ToolSchema } from './tool-schema.js';
export * from './hooks/types.js';
export * from './hooks/manager.js';
export * from './hooks/serialize.js';
export { JSAgentExecutor } from './runtime/executor.js';
export type { JSAgentExecutorOptions, ModelReplyJournaling, RunStartedInfo } from './runtime/executor.js';
export type { ReconcileOptions } from './runtime/reconcile-options.js';
export { dryRunStub, type DryRunStub } from './runtime/tool-dry-run.js';
export type { AgentRuntime, ExecuteOptions, AgentHandle, RecoverOptions, RunCallOptions, ResumeOptions, RetryOptions, ToolResultSubmission, ApprovalDecision } from './runtime/agent-runtime.js';
export type { AuditHooks } from './runtime/hook-dispatch.js';
export { DEFAULT_RESOURCE_LIMITS } from './runtime/limits.js';
export type { ResolvedLimits, ResourceLimits } from './runtime/limits.js';
export { MAX_INPUT_MESSAGES, normalizeTurnInput } from './runtime/turn-input.js';
export type { NormalizedTurnInput, TurnInput, UIMessageInput } from './runtime/turn-input.js';
export type { RunHost, HostedBegin } from './runtime/run-host.js';
export type { AgentResult } from './runtime/result.js';
export { consoleLogger, silentLogger } from './runtime/logger.js';
export type { Logger } from './runtime/logger.js';
export { defineSubAgentTool, childSessionId } from './sub-agent-tool.js';
export type { SubAgentToolOptions } from './sub-agent-tool.js';
export { defineRemoteSubAgentTool } from './remote-sub-agent-tool.js';
export type { RemoteSubAgentToolOptions } from './remote-sub-agent-tool.js';
export type { RemoteAgentClient, RemoteAgentResult, RemoteCallOptions, RemoteRunRef, RemoteStartRequest, RemoteStreamItem, RemoteStreamOptions } from './runtime/remote-agent-client.js';
export { createInProcessAgentClient, remoteSessionId } from './runtime/in-process-agent-client.js';
export type { InProcessAgentClientOptions } from './runtime/in-process-agent-client.js';
export { InMemoryStateStore } from './memory/state-store.js';
export type { InMemoryRetention, InMemoryStateStoreCounts, InMemoryStateStoreOptions } from './memory/state-store.js';
export { InMemoryStreamManager } from './memory/stream-manager.js';
export type { InMemoryStreamCounts, InMemoryStreamManagerOptions } from './memory/stream-manager.js';
export { InMemoryUsageStore } from './memory/usage-store.js';
export type { SessionEvent, SessionEventType, SessionEventDataMap, SessionHookContext } from './subscribers/index.js';
