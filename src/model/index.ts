export * from './common.js';
export * from './control.js';
export * from './agent.js';
export * from './step.js';
export * from './event.js';
export * from './issues.js';
export * from './stream.js';
export * from './test-case.js';
