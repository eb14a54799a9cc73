/**
 * JSON Schema validations run on worker threads. ajv's work is not bounded by the size of
 * the value alone: uniqueItems compares items pairwise (60,000 small arrays held the loop
 * for over 20 s), and references let a schema of a few lines walk its parts 2^n times
 * (a ladder of 30 `allOf`/`anyOf` steps on a one-character value). Every validation that
 * schema-shape.ts cannot bound, and every one of a value too long to bound cheaply, runs
 * here (json/index.ts decides), never on the event loop.
 *
 * A validation still running after JSON_TIMEOUT_MS is stopped and fails (its thread is
 * ended and replaced: ../threads.ts), and at most MAX_QUEUED wait for a thread: both are
 * evaluator errors, which the control's on_error decides (deny controls fail closed by
 * default). Each thread compiles a schema the first time it is sent it (the schema was
 * already checked when the control was saved), and keeps the last 64.
 */
import { createRequire } from 'node:module';
import type { ErrorObject } from 'ajv/dist/2020.js';
import { AJV_OPTIONS } from '../json-schema.js';
import { ThreadPool } from '../threads.js';

/**
 * A validation still running after this is stopped and fails. ajv validates a megabyte
 * against an ordinary schema in tens of milliseconds; this leaves room for a busy machine
 * while keeping a thread from being held for long by one hostile step.
 */
export const JSON_TIMEOUT_MS = 2_000;

/** Validations waiting for a thread at most. */
export const MAX_QUEUED = 64;

/** Errors a thread sends back at most (a message names three; the rest are counted). */
export const MAX_ERRORS = 1_000;

export interface ValidateJob {
  /** The schema as JSON text: the key each thread keeps its compiled validator under. */
  schema: string;
  /** The value as JSON text. */
  text: string;
}

/** `not_json`: the text does not parse; otherwise ajv's verdict and its first errors. */
export type ValidateAnswer = { not_json: true } | { valid: true } | { valid: false; errors: ErrorObject[] };

// The thread's code (see ../threads.ts): ajv with the settings of json-schema.ts, and RE2
// behind its pattern keywords, as on the loop.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { Ajv2020 } = require(workerData.ajv);
const addFormats = require(workerData.formats);
const RE2 = require(workerData.re2);
const regExp = Object.assign((pattern, flags) => new RE2(pattern, 'u' + flags.replace('u', '')), { code: 're2' });
const validators = new Map();
function validatorOf(schema) {
  let v = validators.get(schema);
  if (v === undefined) {
    if (validators.size >= 64) validators.delete(validators.keys().next().value);
    const ajv = new Ajv2020({ ...workerData.options, code: { regExp } });
    (addFormats.default || addFormats)(ajv);
    v = ajv.compile(JSON.parse(schema));
    validators.set(schema, v);
  }
  return v;
}
parentPort.on('message', ({ id, job: { schema, text } }) => {
  try {
    const validate = validatorOf(schema);
    let data;
    try {
      data = JSON.parse(text);
    } catch {
      return parentPort.postMessage({ id, answer: { not_json: true } });
    }
    if (validate(data)) return parentPort.postMessage({ id, answer: { valid: true } });
    const errors = (validate.errors || []).slice(0, workerData.maxErrors)
      .map((e) => ({ keyword: e.keyword, instancePath: e.instancePath, schemaPath: e.schemaPath, params: e.params, message: e.message }));
    parentPort.postMessage({ id, answer: { valid: false, errors } });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

export interface ValidatePoolOptions {
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Default JSON_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Default MAX_QUEUED. */
  maxQueued?: number;
}

export class ValidatePool {
  readonly #pool: ThreadPool<ValidateJob, ValidateAnswer>;

  constructor(options: ValidatePoolOptions = {}) {
    this.#pool = new ThreadPool({
      name: 'json validation',
      source: () => THREAD_SOURCE,
      workerData: () => {
        const require = createRequire(import.meta.url);
        return {
          ajv: require.resolve('ajv/dist/2020.js'),
          formats: require.resolve('ajv-formats'),
          re2: require.resolve('re2'),
          options: AJV_OPTIONS,
          maxErrors: MAX_ERRORS,
        };
      },
      size: options.size,
      timeoutMs: options.timeoutMs ?? JSON_TIMEOUT_MS,
      maxQueued: options.maxQueued ?? MAX_QUEUED,
      queueFull: (max) => `${max} json validations are already waiting for a thread`,
    });
  }

  /** The verdict on `job`, from a thread; rejects when the queue is full, or the validation fails or times out. */
  validate(job: ValidateJob): Promise<ValidateAnswer> {
    return this.#pool.run(job);
  }

  /** Ends every thread; pending validations fail. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

let shared: ValidatePool | undefined;

/** The process's pool, started on first use. */
export function validatePool(): ValidatePool {
  shared ??= new ValidatePool();
  return shared;
}
