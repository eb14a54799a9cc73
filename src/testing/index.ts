export * from './types.js';
export { runTests, type TestRunInput } from './run-tests.js';
export { checkTests, type CheckedTests, type KnownNames, type RunnableCase } from './check-tests.js';
export { compileAgentSets, type AgentLinks, type AgentSets, type NamedControl } from './agent-sets.js';
