import type { RuntimeScenario } from '../scenario.js';
import { regressionScenarios } from './regressions.js';
import { lifecycleScenarios } from './lifecycle.js';
import { startSignalScenarios } from './start-signals.js';
import { suspensionScenarios } from './suspension.js';
import { steeringScenarios } from './steering.js';
import { toolScenarios } from './tools.js';
import { modelCallScenarios } from './model-calls.js';
import { policyScenarios } from './policies.js';
import { stopScenarios } from './stop.js';
import { supersedeScenarios } from './supersede.js';
import { retryScenarios } from './retry-rewind.js';
import { recoveryScenarios } from './recovery.js';
import { subAgentScenarios } from './sub-agents.js';
import { subAgentTreeScenarios } from './sub-agent-trees.js';
import { subAgentStreamScenarios } from './sub-agent-streams.js';
import { toolPolicyScenarios } from './tool-policies.js';

/** Every scenario of the runtime conformance suite, by topic. */
export const runtimeScenarios: readonly RuntimeScenario[] = Object.freeze([...lifecycleScenarios, ...startSignalScenarios, ...suspensionScenarios, ...steeringScenarios, ...toolScenarios, ...toolPolicyScenarios, ...modelCallScenarios, ...policyScenarios, ...stopScenarios, ...supersedeScenarios, ...retryScenarios, ...recoveryScenarios, ...subAgentScenarios, ...subAgentTreeScenarios, ...subAgentStreamScenarios, ...regressionScenarios]);

export { lifecycleScenarios, startSignalScenarios, suspensionScenarios, steeringScenarios, toolScenarios, toolPolicyScenarios, modelCallScenarios, policyScenarios, stopScenarios, supersedeScenarios, retryScenarios, recoveryScenarios, subAgentScenarios, subAgentTreeScenarios, subAgentStreamScenarios, regressionScenarios };
