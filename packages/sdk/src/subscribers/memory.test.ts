import { runFileStoreConformance, runKVStoreConformance } from './conformance.js';
import { InMemoryFileStore, InMemoryKVStore } from './memory.js';

runKVStoreConformance({ name: 'InMemoryKVStore', create: () => new InMemoryKVStore() });
runFileStoreConformance({ name: 'InMemoryFileStore', create: () => new InMemoryFileStore() });
