import { InMemoryStreamManager } from '../index.js';
import { runStreamManagerConformance } from '../conformance/index.js';

runStreamManagerConformance({ name: 'InMemoryStreamManager', create: () => new InMemoryStreamManager() });
