import { InMemoryStateStore } from '../index.js';
import { runStateStoreConformance } from '../testing/index.js';

runStateStoreConformance({ name: 'InMemoryStateStore', create: () => new InMemoryStateStore() });
