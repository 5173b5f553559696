import { createRequire } from 'node:module';
import type { asSchema as AsSchema } from '@ai-sdk/provider-utils';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import type { JSONSchema } from './llm.js';

// Tool schemas: any Standard Schema (zod 3 and 4, valibot, arktype, ...) that can also describe itself as
// JSON Schema, or an AI SDK schema made with `jsonSchema()`. zod 4 keeps its own path (synchronous
// checks, its own messages); zod 3 and other Standard Schemas get their JSON Schema the way the AI SDK
// makes it, so a tool sends the model what it would send through the AI SDK.

/** The AI SDK's schema shape (`jsonSchema(...)`, `zodSchema(...)` from `ai`): a JSON Schema and an optional validator. */
export interface AISDKSchema<T = unknown> {
  /** Marks the output type; never read at run time. */
  readonly _type: T;
  /** The JSON Schema sent to the model. */
  readonly jsonSchema: object | PromiseLike<unknown>;
  /** Checks a value; without it, arguments are passed on unchecked. */
  readonly validate?: (value: unknown) => AISDKValidation<T> | PromiseLike<AISDKValidation<T>>;
}

/** What an {@link AISDKSchema}'s `validate` returns. */
export type AISDKValidation<T> = { readonly success: true; readonly value: T } | { readonly success: false; readonly error: unknown };

/** A tool's input or output schema: a Standard Schema (zod 3 or 4, valibot, arktype, ...) or an AI SDK schema (`jsonSchema()`). */
export type ToolSchema<T = unknown> = StandardSchemaV1<unknown, T> | AISDKSchema<T>;

/** The type a tool schema produces. */
export type InferToolSchema<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : S extends AISDKSchema<infer T> ? T : unknown;

/** One problem a schema found, with its path as strings. */
export interface SchemaIssue {
  readonly path: readonly string[];
  readonly message: string;
}

/** The outcome of checking a value against a tool schema. */
export type SchemaCheck<T = unknown> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string; readonly issues: readonly SchemaIssue[] };

const AI_SDK_SCHEMA = Symbol.for('vercel.ai.schema');

let asSchemaOnce: typeof AsSchema | undefined;

/** The AI SDK's `asSchema`, loaded on first use: an agent whose tools are all zod 4 never loads it. */
function asSchema(schema: unknown): ReturnType<typeof AsSchema> {
  asSchemaOnce ??= (createRequire(import.meta.url)('@ai-sdk/provider-utils') as { asSchema: typeof AsSchema }).asSchema;
  return asSchemaOnce(schema as Parameters<typeof AsSchema>[0]);
}

/** True for a schema made by the AI SDK's `jsonSchema()` (or `zodSchema()`), from any copy of the AI SDK. */
export function isAISDKSchema(value: unknown): value is AISDKSchema {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && (value as Record<symbol, unknown>)[AI_SDK_SCHEMA] === true && 'jsonSchema' in value;
}

function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null || !('~standard' in value)) return false;
  const props = (value as StandardSchemaV1)['~standard'];
  return typeof props === 'object' && props !== null && typeof props.validate === 'function';
}

function isZod4(value: unknown): value is z.ZodType {
  return isStandardSchema(value) && '_zod' in value;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (isStandardSchema(value)) return `a ${value['~standard'].vendor} schema`;
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * The JSON Schema of a tool schema, computed once when the tool is defined. Anything that is neither a
 * Standard Schema able to describe itself as JSON Schema nor an AI SDK schema is a ConfigError naming
 * `owner` (for example `Tool "search": inputSchema`), with `details` attached.
 */
export function toolJSONSchema(schema: unknown, owner: string, details: Record<string, unknown> = {}): JSONSchema {
  if (!isZod4(schema) && !isAISDKSchema(schema) && !isStandardSchema(schema)) {
    throw new ConfigError(
      `${owner} must be a Standard Schema (zod 3 or 4, valibot with toStandardJsonSchema(), arktype, ...) or an AI SDK schema; got ${describe(schema)}. Wrap a plain JSON Schema in jsonSchema() from 'ai'.`,
      details,
    );
  }
  let json: unknown;
  try {
    // asSchema converts zod 3 itself and asks other Standard Schemas for their Standard JSON Schema.
    if (isZod4(schema)) json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
    else json = (isAISDKSchema(schema) ? schema : asSchema(schema)).jsonSchema;
  } catch (error) {
    const vendor = isStandardSchema(schema) ? schema['~standard'].vendor : 'AI SDK';
    const fix = vendor === 'valibot' ? "wrap it in toStandardJsonSchema() from '@valibot/to-json-schema'" : "pass jsonSchema(yourJsonSchema, { validate }) from 'ai'";
    throw new ConfigError(`${owner} is ${describe(schema)} that cannot be turned into JSON Schema (${error instanceof Error ? error.message : String(error)}); ${fix}.`, { ...details, vendor });
  }
  if (json !== null && typeof json === 'object' && typeof (json as PromiseLike<unknown>).then === 'function') {
    throw new ConfigError(`${owner}: its JSON Schema is a promise; resolve it before defining the tool.`, details);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new ConfigError(`${owner}: its JSON Schema is not an object.`, details);
  const copy = { ...(json as Record<string, unknown>) };
  delete copy['$schema'];
  return Object.freeze(copy);
}

function pathOf(path: StandardSchemaV1.Issue['path']): string[] {
  // Array.from, not map: a library's path may be an Array subclass, and map would keep its class.
  return Array.from(path ?? [], (segment) => String(typeof segment === 'object' && segment !== null ? segment.key : segment));
}

function fromStandard<T>(result: StandardSchemaV1.Result<T>): SchemaCheck<T> {
  if (!result.issues) return { ok: true, value: result.value };
  const issues = Array.from(result.issues, (i) => ({ path: pathOf(i.path), message: String(i.message) }));
  return { ok: false, issues, message: issues.map((i) => `✖ ${i.message}${i.path.length > 0 ? `\n  → at ${i.path.join('.')}` : ''}`).join('\n') };
}

function fromAISDK<T>(result: AISDKValidation<T>): SchemaCheck<T> {
  if (result.success) return { ok: true, value: result.value };
  const cause = result.error;
  const message = cause instanceof Error ? cause.message : String(cause);
  return { ok: false, message: `✖ ${message}`, issues: [{ path: [], message }] };
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Checks `value` against a tool schema: synchronously when the schema answers synchronously (zod 4 always
 * does), else as a promise. A schema of an unknown kind refuses every value.
 */
export function checkSchema<T = unknown>(schema: ToolSchema<T> | z.ZodType<T>, value: unknown): SchemaCheck<T> | Promise<SchemaCheck<T>> {
  if (isZod4(schema)) {
    const parsed = (schema as z.ZodType<T>).safeParse(value);
    return parsed.success ? { ok: true, value: parsed.data } : { ok: false, message: z.prettifyError(parsed.error), issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) };
  }
  if (isAISDKSchema(schema)) {
    const validate = (schema as AISDKSchema<T>).validate;
    if (validate === undefined) return { ok: true, value: value as T };
    const result = validate(value);
    return isThenable(result) ? Promise.resolve(result).then((r) => fromAISDK(r)) : fromAISDK(result);
  }
  if (isStandardSchema(schema)) {
    const result = (schema as StandardSchemaV1<unknown, T>)['~standard'].validate(value);
    return isThenable(result) ? Promise.resolve(result).then((r) => fromStandard(r)) : fromStandard(result);
  }
  return { ok: false, message: '✖ The tool has no usable schema.', issues: [{ path: [], message: 'The tool has no usable schema.' }] };
}
