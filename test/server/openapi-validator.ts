/**
 * Checks real HTTP answers against the OpenAPI document the server serves: the status must
 * be declared for the operation, the media type must be one the document names for that
 * status, and the body must validate (ajv, JSON Schema draft 2020-12, strict mode) against
 * the schema the document gives for them.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, unknown>;

const COMPONENTS_ID = 'urn:guardctl:components';

export interface Answer {
  status: number;
  /** The Content-Type header as sent. */
  contentType: string;
  /** The body as text (the first chunk for a stream). */
  text: string;
}

export class DocumentValidator {
  readonly #ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    addFormats(this.#ajv);
    const components = (doc.components as Json | undefined)?.schemas as Json | undefined;
    this.#ajv.addSchema({ $id: COMPONENTS_ID, $defs: toAjvRefs(components ?? {}) });
  }

  /** The operation the document gives for `method` on the templated `path`, or undefined. */
  operation(path: string, method: string): Json | undefined {
    return ((this.doc.paths as Json)[path] as Json | undefined)?.[method.toLowerCase()] as Json | undefined;
  }

  /** Problems with `answer` as the answer of that operation; empty when it conforms. */
  check(path: string, method: string, answer: Answer): string[] {
    const where = `${method.toUpperCase()} ${path} -> ${answer.status}`;
    const op = this.operation(path, method);
    if (!op) return [`${where}: no such operation in the document`];
    const declared = (op.responses as Json)[String(answer.status)];
    if (declared === undefined) return [`${where}: status not declared (declared: ${Object.keys(op.responses as Json).join(', ')})`];
    const response = this.#resolve(declared as Json);
    const content = response.content as Json | undefined;
    if (!content) return answer.text === '' ? [] : [`${where}: the document declares no body, the server sent one`];
    const mediaType = essence(answer.contentType);
    const entry = Object.entries(content).find(([type]) => essence(type) === mediaType);
    if (!entry) return [`${where}: media type ${answer.contentType} not declared (declared: ${Object.keys(content).join(', ')})`];
    const schema = (entry[1] as Json).schema as Json;
    let body: unknown = answer.text;
    if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
      try {
        body = JSON.parse(answer.text);
      } catch {
        return [`${where}: body is not JSON: ${answer.text.slice(0, 200)}`];
      }
    }
    const validate = this.#validator(schema);
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => `${where}: ${e.instancePath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  }

  /** Declared statuses of an operation (as numbers; `default` left out). */
  statuses(path: string, method: string): number[] {
    const op = this.operation(path, method);
    return op ? Object.keys(op.responses as Json).filter((s) => s !== 'default').map(Number) : [];
  }

  #resolve(response: Json): Json {
    const ref = response.$ref;
    if (typeof ref !== 'string') return response;
    const name = ref.replace('#/components/responses/', '');
    const found = ((this.doc.components as Json).responses as Json)[name];
    if (!found) throw new Error(`unresolved ${ref}`);
    return found as Json;
  }

  #validator(schema: Json): ValidateFunction {
    const key = JSON.stringify(schema);
    let validate = this.#compiled.get(key);
    if (!validate) {
      validate = this.#ajv.compile(toAjvRefs(schema));
      this.#compiled.set(key, validate);
    }
    return validate;
  }
}

/** `#/components/schemas/X` refs point into the components schema ajv holds. */
function toAjvRefs<T>(value: T): T {
  if (Array.isArray(value)) return value.map(toAjvRefs) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] =
      key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
        ? `${COMPONENTS_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`
        : toAjvRefs(v);
  }
  return out as T;
}

function essence(mediaType: string): string {
  return (mediaType.split(';')[0] ?? '').trim().toLowerCase();
}
