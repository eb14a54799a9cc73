/** Binds the loader to the engine's one validation implementation (the server uses the same). */
import { validateControlDocument } from '../engine/validate-control.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlValidator } from './load.js';

export function controlValidator(registry: EvaluatorRegistry): ControlValidator {
  return (document) => validateControlDocument(document, registry);
}
