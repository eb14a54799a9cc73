export { SqliteStore, migrateSqlite, type SqliteStoreOptions } from './sqlite-store.js';
export { sqliteMigrations } from './migrations.js';
