/**
 * @helix-agents/sdk/hooks: event subscribers (`defineHook`) that run after each session event is
 * recorded, off the model's path; their dispatcher; and the kv / files ports their context uses.
 */
export { defineHook, isHookDefinition, hookEventKeys, hookNameProblem, mountHook, mountHooks } from './define.js';
export type { DefinedHookEvents, HookDefinition, HookEvents, HookEventKey, MountedHook, MountedHookPack, SessionEventHandler } from './define.js';
export { SESSION_EVENT_TYPES, isSessionEventType } from './events.js';
export type { ActionResult, RequestedAction, SessionEvent, SessionEventDataMap, SessionEventOf, SessionEventType, TurnCost, TurnUsage } from './events.js';
export { toSessionEvent } from './chunk-events.js';
export type { ChunkEventContext } from './chunk-events.js';
export { createHookDispatcher } from './dispatcher.js';
export type { HookDispatcher, HookDispatcherOptions, HookDispatchObserver, HookHandlerCall, RunSource } from './dispatcher.js';
export { artifactBucket, createHookFiles, createHookKV, createSessionArtifacts, createSessionHookContext, fileBucket, kvNamespace } from './context.js';
export type {
  Artifact,
  ArtifactInput,
  ArtifactTags,
  FileScopeOptions,
  HookFiles,
  HookKV,
  SessionArtifacts,
  SessionHookContext,
  SessionHookContextOptions,
  SessionInfo,
  SessionMode,
  SessionPurpose,
} from './context.js';
export { assertFilePath, assertKVKey, toJsonValue } from './ports.js';
export type { FileInfo, FileStore, JsonValue, KVStore, StoredFile } from './ports.js';
export { InMemoryFileStore, InMemoryKVStore, fileInfo } from './memory.js';
export { HookStoreError } from './errors.js';
export type { HookStoreErrorCode } from './errors.js';
