export * from './types.js';
export { openStore, storeTargetOf, DEFAULT_SQLITE_PATH, type OpenStoreOptions, type StoreTarget } from './open-store.js';
export { SqliteStore, type SqliteStoreOptions } from './sqlite/index.js';
export { PostgresStore, type PostgresStoreOptions } from './postgres/index.js';
