import { InMemoryStateStore, InMemoryStreamManager } from '../index.js';
import { runRetentionConformance } from '../conformance/index.js';

// The two memory stores with one policy, pruned together as a caller or a timer would.
runRetentionConformance({
  name: 'InMemoryStateStore + InMemoryStreamManager',
  create: (retention) => {
    const stateStore = new InMemoryStateStore({ retention });
    const streamManager = new InMemoryStreamManager({ retention });
    return {
      stateStore,
      streamManager,
      prune: async (now) => {
        const chunks = await streamManager.prune(now);
        const journal = await stateStore.prune();
        return { chunks: chunks.chunks, journalEntries: journal.journalEntries, records: journal.records };
      },
    };
  },
  destroy: (stores) => (stores.streamManager as InMemoryStreamManager).close(),
});
