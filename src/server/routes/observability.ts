// The observability endpoints live with the rest of observability (src/observability);
// this file gives the server's routes folder its usual one-module-per-resource entry.
export { observabilityRoutes, metricsRoutes } from '../../observability/index.js';
export type { ObservabilityRoutesOptions } from '../../observability/index.js';
