import { InMemoryStateStore, InMemoryUsageStore } from '../index.js';
import { runUsageStoreConformance } from '../conformance/index.js';

runUsageStoreConformance({ name: 'InMemoryUsageStore', create: () => new InMemoryUsageStore() });
// The in-memory state store is a usage store too (usage can be recorded with a commit).
runUsageStoreConformance({ name: 'InMemoryStateStore as a UsageStore', create: () => new InMemoryStateStore() });
