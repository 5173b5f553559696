/**
 * Why `value` cannot be stored or streamed as JSON (a BigInt, a function, a symbol, a cycle), or
 * undefined when it can. Shared references that are not cycles are fine.
 */
export function unserializable(value: unknown): string | undefined {
  // A scalar needs no walk (and no set of ancestors).
  const scalar = scalarProblem(value);
  if (scalar !== undefined || typeof value !== 'object' || value === null) return scalar === undefined ? undefined : `${scalar} at $`;
  const found = walk(value, new Set());
  return found === undefined ? undefined : `${found.what} at ${['$', ...found.path.reverse()].join('.')}`;
}

/** What makes a value that is not an object unserializable, or undefined. */
function scalarProblem(value: unknown): string | undefined {
  const kind = typeof value;
  if (kind === 'bigint') return 'a BigInt';
  if (kind === 'function') return 'a function';
  if (kind === 'symbol') return 'a symbol';
  return undefined;
}

/** The first problem under `value`, with the keys leading to it innermost first (the path is built only for a problem). */
function walk(value: unknown, ancestors: Set<object>): { readonly what: string; readonly path: string[] } | undefined {
  const scalar = scalarProblem(value);
  if (scalar !== undefined) return { what: scalar, path: [] };
  if (typeof value !== 'object' || value === null) return undefined;
  const object = value as object;
  if (ancestors.has(object)) return { what: 'a circular reference', path: [] };
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') return undefined;
  ancestors.add(object);
  try {
    if (Array.isArray(object)) {
      for (let i = 0; i < object.length; i++) {
        const problem = walk(object[i], ancestors);
        if (problem !== undefined) return (problem.path.push(String(i)), problem);
      }
      return undefined;
    }
    for (const key of Object.keys(object)) {
      const problem = walk((object as Record<string, unknown>)[key], ancestors);
      if (problem !== undefined) return (problem.path.push(key), problem);
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
