/** Binds the loader to the engine's one validation implementation (the server uses the same). */
import { validateControlDocument } from '../engine/validate-control.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlValidator } from './load.js';

export function controlValidator(registry: EvaluatorRegistry): ControlValidator {
  // The names go with the validator so an unknown evaluator's hint can name the nearest one.
  return Object.assign((document: unknown) => validateControlDocument(document, registry), { evaluatorNames: () => registry.names() });
}
