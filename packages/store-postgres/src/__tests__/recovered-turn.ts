// Shared by the Postgres fault tests: what must hold once the interrupted second turn has been recovered.
import type { AgentResult } from '@helix-agents/sdk';
import { expect } from 'vitest';
import type { PostgresStores } from '../index.js';

/**
 * The recovered run completed; session s1 holds the first turn, the second message once and the
 * second reply last; and its stream is whole (gap-free sequence numbers).
 */
export async function expectRecoveredSecondTurn(stores: PostgresStores, final: AgentResult): Promise<void> {
  expect(final.status).toBe('completed');
  const session = await stores.stateStore.loadSession('s1');
  const texts = session!.messages.map((m) => (m.role === 'user' || m.role === 'assistant' ? m.content : m.role));
  expect(texts.slice(0, 2)).toEqual(['hello', 'turn one']);
  expect(texts.filter((t) => t === 'again')).toHaveLength(1);
  expect(texts.at(-1)).toBe('turn two');
  const seqs: number[] = [];
  for await (const chunk of stores.streamManager.read('s1', { follow: false })) seqs.push(chunk.seq);
  expect(seqs).toEqual(seqs.map((_, i) => i));
}
