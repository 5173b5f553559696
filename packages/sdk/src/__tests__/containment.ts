// Shared by the pathInside tests: which paths a containment check accepts and which it refuses.
import { expect } from 'vitest';

/** Expects `inside` to accept every path of `accepted` and to refuse every path of `refused`. */
export function expectContainment(inside: (path: string) => boolean, accepted: readonly string[], refused: readonly string[]): void {
  for (const path of accepted) expect(inside(path), `inside: ${JSON.stringify(path)}`).toBe(true);
  for (const path of refused) expect(inside(path), `outside: ${JSON.stringify(path)}`).toBe(false);
}
