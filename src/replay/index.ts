export * from './types.js';
export { replay, describeChange, type ReplayOptions } from './replay.js';
export { parseJsonLines, readJsonLinesFile, fetchRecordings, type SourceRead } from './sources.js';
export { compileReplaySides, type ReplaySide, type ReplaySides } from './sides.js';
export { replayPlan, DEFAULT_REPLAY_LIMIT, type ReplayRequest } from './run-replay.js';
