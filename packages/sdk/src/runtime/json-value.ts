/**
 * Why `value` cannot be stored or streamed as JSON (a BigInt, a function, a symbol, a cycle), or
 * undefined when it can. Shared references that are not cycles are fine.
 */
export function unserializable(value: unknown): string | undefined {
  return walk(value, new Set(), '$');
}

function walk(value: unknown, ancestors: Set<object>, path: string): string | undefined {
  const kind = typeof value;
  if (kind === 'bigint') return `a BigInt at ${path}`;
  if (kind === 'function') return `a function at ${path}`;
  if (kind === 'symbol') return `a symbol at ${path}`;
  if (kind !== 'object' || value === null) return undefined;
  const object = value as object;
  if (ancestors.has(object)) return `a circular reference at ${path}`;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') return undefined;
  ancestors.add(object);
  try {
    const entries = Array.isArray(object) ? object.map((v, i) => [String(i), v] as const) : Object.entries(object);
    for (const [key, child] of entries) {
      const problem = walk(child, ancestors, `${path}.${key}`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  } finally {
    ancestors.delete(object);
  }
}

/** The length of `value` as JSON (0 for undefined); call it on serializable values only. */
export function jsonLength(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}
