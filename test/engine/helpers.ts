import { ControlDataSchema, type ControlDataInput, type Step } from '../../src/model/index.js';
import type { ControlInput } from '../../src/engine/index.js';

let nextId = 1;

/** A control input from partial control data, parsed the way the store would hold it. */
export function control(name: string, data: ControlDataInput, id = nextId++): ControlInput {
  return { control_id: id, name, data: ControlDataSchema.parse(data) };
}

export function regexControl(
  name: string,
  pattern: string,
  extra: Partial<ControlDataInput> = {},
): ControlInput {
  return control(name, {
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern } },
    action: { decision: 'deny' },
    ...extra,
  });
}

export function toolStep(name: string, input: unknown, extra: Partial<Step> = {}): Step {
  return { type: 'tool', name, input, ...extra };
}
