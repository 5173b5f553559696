import { AgentError, type AgentErrorOptions } from '../errors.js';

/** The codes of {@link HookStoreError}. */
export type HookStoreErrorCode = 'hook_store_invalid_key' | 'hook_store_invalid_value' | 'hook_store_invalid_path' | 'hook_store_closed';

const HINTS: Readonly<Record<HookStoreErrorCode, string>> = {
  hook_store_invalid_key: 'Use a non-empty key of at most 1,024 characters.',
  hook_store_invalid_value: 'kv stores JSON: plain objects, arrays, strings, finite numbers, booleans and null.',
  hook_store_invalid_path: 'Use a relative path such as "notes/today.md": no leading "/", no "." or ".." segments, no empty segments.',
  hook_store_closed: 'The store was closed; hooks can no longer use it (the host is shutting down).',
};

/** A hook's kv, files or artifacts call was refused: a bad key, path or value, or a closed store. */
export class HookStoreError extends AgentError {
  constructor(code: HookStoreErrorCode, message: string, options: AgentErrorOptions = {}) {
    super(code, message, { layer: 'hook', severity: 'error', retryable: false, hint: HINTS[code], ...options });
  }
  /** True for a HookStoreError from any copy of this package. */
  static override isInstance(value: unknown): value is HookStoreError {
    return AgentError.isInstance(value) && value.code.startsWith('hook_store_');
  }
}
