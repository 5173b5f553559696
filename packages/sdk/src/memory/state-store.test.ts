import { InMemoryStateStore } from '../index.js';
import { runStateStoreConformance } from '../conformance/index.js';

runStateStoreConformance({ name: 'InMemoryStateStore', create: () => new InMemoryStateStore() });
