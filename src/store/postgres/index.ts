export { PostgresStore, migratePostgres, type PostgresStoreOptions } from './postgres-store.js';
export { postgresMigrations } from './migrations.js';
export { CHANGE_CHANNEL, changeInfoOf } from './change-listener.js';
export { mapPgError } from './errors.js';
