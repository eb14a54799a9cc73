/**
 * Which MCP requests of a client are steps the guard checks, and as what:
 *
 * | method           | step                                                   | a refusal is            |
 * |------------------|--------------------------------------------------------|-------------------------|
 * | `tools/call`     | `{type: tool, name: params.name, input: arguments}`    | a result, `isError`     |
 * | `resources/read` | `{type: resource, name: params.uri, input: {uri}}`     | a JSON-RPC error        |
 * | `prompts/get`    | `{type: prompt, name: params.name, input: arguments}`  | a JSON-RPC error        |
 * | `tasks/result`   | the tool step of the task (its output is checked post) | a result, `isError`     |
 *
 * Each is checked `pre` before it reaches the server and its answer `post` before it
 * reaches the client. A name is never normalised: a control scoped to `run_sql` sees
 * exactly what the server receives.
 */
import { ErrorCode, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { StepType } from '../model/index.js';
import type { StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { folded, shown } from './mcp-text.js';

/** The methods whose requests are steps (or, for tasks/result, the output of one). */
export const CHECKED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'prompts/get', 'tasks/result']);

/**
 * Requests about one task: relayed only for a task a checked call of the relay started, and
 * answered with what the task produced (tasks/result) or its status, whose message the
 * server writes as it likes: each answer is checked as the output of that call.
 */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/result', 'tasks/get', 'tasks/cancel']);

/**
 * The methods relayed under their exact spelling only: the checked ones and those about a
 * task, tools/list, whose answer the pins filter (mcp-pins.ts), and tasks/list, whose
 * answer the relay filters and checks.
 */
export const EXACT_METHODS: ReadonlySet<string> = new Set([...CHECKED_METHODS, ...TASK_METHODS, 'tools/list', 'tasks/list']);

/** A method a lenient server might read as one of EXACT_METHODS, spelt otherwise (`Tools/Call`, `resources/read\u200b`). */
export function isCheckedMethodMisspelt(method: string): boolean {
  if (EXACT_METHODS.has(method)) return false;
  const loose = folded(method);
  return [...EXACT_METHODS].some((exact) => exact === loose);
}

/** The parameters of a checked request or a task's that the gateway reads, by their folded spelling. */
const READ_PARAMETERS: ReadonlyMap<string, string> = new Map(['name', 'arguments', 'uri', 'task', 'taskId', '_meta'].map((p) => [folded(p), p]));

/**
 * A parameter of a checked request spelt as one the gateway reads without being it (`NAME`
 * beside `name`), with that one; null when there is none. A lenient server (Go's
 * encoding/json matches any case, the last match winning) would call the tool, read the
 * resource or fetch the task it names, while the controls checked the other.
 */
export function misnamedParameter(params: Record<string, unknown> | undefined): [string, string] | null {
  if (params === undefined) return null;
  for (const key of Object.keys(params)) {
    const parameter = READ_PARAMETERS.get(folded(key));
    if (parameter !== undefined && parameter !== key) return [key, parameter];
  }
  return null;
}

/** A percent-encoded character that needs no encoding (RFC 3986 unreserved: letters, digits, `-`, `.`, `_`, `~`). */
const ENCODED_UNRESERVED = /%(?:3[0-9]|4[1-9a-f]|5[0-9a]|6[1-9a-f]|7[0-9a]|2[de]|5f|7e)/gi;

/** A `.` or `..` segment, separated by slashes or backslashes. */
const HIDDEN_DOT_SEGMENT = /[/\\]\.\.?(?:[/\\?#]|$)/;

export type StepOf =
  | { ok: true; step: StepInput; /** tools/call with params.task: its result comes through tasks/result. */ task: boolean }
  | { ok: false; code: number; message: string; report?: string };

/** The step a checked request makes (tasks/result excepted: its step is the task's). */
export function stepOf(method: string, params: Record<string, unknown> | undefined, serverName: string): StepOf {
  const context = { mcp_server: serverName };
  const step = (type: StepType, name: string, input: unknown): StepInput => ({ type, name, input, context });
  switch (method) {
    case 'tools/call': {
      const name = params?.name;
      if (typeof name !== 'string' || name === '') return invalid('tools/call needs params.name, the tool to call');
      const args = params?.arguments;
      // MCP's arguments are an object; a lenient server may parse a string or unwrap an array the selectors never saw.
      if (args !== undefined && !isObject(args)) {
        return invalid(
          'tools/call params.arguments must be an object (or absent, for a call without arguments)',
          `its arguments are ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`}, not an object`,
        );
      }
      if (holdsProto(args)) {
        return invalid('tools/call params.arguments must not hold a key named __proto__', 'its arguments hold a key named __proto__, which a JavaScript server copying them (Object.assign) reads as inherited parameters');
      }
      // A call that carries no arguments is a step with no input: null, as everywhere else.
      return { ok: true, step: step('tool', name, args ?? null), task: params?.task !== undefined };
    }
    case 'resources/read': {
      const uri = params?.uri;
      if (typeof uri !== 'string' || uri === '') return invalid('resources/read needs params.uri, the resource to read');
      // Servers look a resource up by its URI as a URL parser writes it (the MCP SDK's server:
      // new URL(uri).href), which folds the scheme's case, drops tabs, newlines and outer spaces
      // and resolves dot segments, or decode its path (fileURLToPath, unquote), where `%73` is
      // `s`: a control scoped to `db://secrets` must not miss `DB://secrets` or `db://%73ecrets`.
      // An escape's hex digits are written in upper case (RFC 3986): `%c3%a9` is `%C3%A9` to a server that decodes the path.
      const normal = (URL.canParse(uri) ? new URL(uri).href : uri)
        .replace(ENCODED_UNRESERVED, (e) => String.fromCharCode(parseInt(e.slice(1), 16)))
        .replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase());
      if (normal !== uri) {
        return invalid(`resources/read params.uri must be written in its normal form: ${JSON.stringify(normal)}`, `its uri ${shown(uri)} is not written in its normal form ${shown(normal)}`);
      }
      // A URL parser resolves only the dot segments between plain slashes; a server that decodes
      // the path (`%2F` is `/`) or reads `\` as a separator (Windows) resolves the others too.
      if (HIDDEN_DOT_SEGMENT.test(uri.replace(/%2f/gi, '/').replace(/%5c/gi, '\\'))) {
        return invalid('resources/read params.uri must not hold a "." or ".." segment', `its uri ${shown(uri)} holds a dot segment behind an encoded slash or a backslash`);
      }
      // A fragment names part of what was read, never another resource, and a file is read by its
      // path alone (fileURLToPath drops the query): either would hide the resource read from a control scoped to it.
      if (uri.includes('#') || (uri.startsWith('file:') && uri.includes('?'))) {
        return invalid('resources/read params.uri must not hold a fragment (#), nor a file: URI a query (?)', `its uri ${shown(uri)} holds a fragment or a file: query`);
      }
      // A file is opened by its path, where an empty segment is no segment (/srv//secrets is
      // /srv/secrets) and a server that decodes the path (unquote) reads `%2F` as a separator.
      if (uri.startsWith('file:') && URL.canParse(uri) && /\/\/|%2f|%5c/i.test(new URL(uri).pathname)) {
        return invalid('resources/read params.uri must not hold an empty segment (//) or an encoded separator (%2F, %5C) in a file: path', `its uri ${shown(uri)} holds an empty segment or an encoded separator in a file: path`);
      }
      // A host name ending in a dot is the same host to DNS: https://example.com./x is https://example.com/x.
      if (/^(?:https?|wss?|ftp):/.test(uri) && URL.canParse(uri) && new URL(uri).hostname.endsWith('.')) {
        return invalid('resources/read params.uri must not end its host name with a dot', `its uri ${shown(uri)} ends its host name with a dot`);
      }
      // A server that drops the user part reads https://any@host/x as https://host/x.
      if (URL.canParse(uri) && (new URL(uri).username !== '' || new URL(uri).password !== '')) {
        return invalid('resources/read params.uri must not hold a user name or password (user@)', `its uri ${shown(uri)} holds a user name or password`);
      }
      return { ok: true, step: step('resource', uri, { uri }), task: false };
    }
    case 'prompts/get': {
      const name = params?.name;
      if (typeof name !== 'string' || name === '') return invalid('prompts/get needs params.name, the prompt to get');
      const args = params?.arguments;
      if (args !== undefined && !isObject(args)) return invalid('prompts/get params.arguments must be an object of strings (or absent)');
      return { ok: true, step: step('prompt', name, args ?? null), task: false };
    }
    default:
      return invalid(`${method} is not a step`);
  }
}

/** The task a tools/call started (a CreateTaskResult), whose result tasks/result fetches later. */
export function taskIdOf(result: Record<string, unknown>): string | null {
  const task = result.task as { taskId?: unknown } | undefined;
  return typeof task?.taskId === 'string' && task.taskId !== '' ? task.taskId : null;
}

/**
 * A deny or steer as the client reads it. Tool results carry errors as results the model
 * reads (`isError`); resources/read and prompts/get have no such result, so theirs is a
 * JSON-RPC error with the verdict's text.
 */
export function refusal(id: RequestId, type: StepType, verdict: Verdict): JSONRPCMessage {
  const message = verdict.message!;
  return type === 'tool' ? toolError(id, message) : { jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidRequest, message } };
}

/** A tool's failure as MCP reports it: a result the model reads. */
export function toolError(id: RequestId, text: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], isError: true } };
}

/** How a step is named in the operator's reports: `tools/call "run_sql"`. */
export function stepText(step: StepInput): string {
  const method = step.type === 'resource' ? 'resources/read' : step.type === 'prompt' ? 'prompts/get' : 'tools/call';
  return `${method} ${shown(step.name)}`;
}

/**
 * Whether a value holds a key named `__proto__` at any depth. JSON gives it as a key like any
 * other, which a control reading `input.path` does not look into; a JavaScript server copying
 * the arguments with Object.assign sets it as the copy's prototype, and reads `path` from it.
 */
function holdsProto(value: unknown): boolean {
  // Walked without recursion: a client's arguments may nest deeper than the stack.
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const at = todo.pop();
    if (typeof at !== 'object' || at === null) continue;
    if (!Array.isArray(at) && Object.hasOwn(at, '__proto__')) return true;
    // One at a time: spreading an array of a million items would overflow the call's arguments.
    for (const item of Array.isArray(at) ? at : Object.values(at)) todo.push(item);
  }
  return false;
}

function invalid(message: string, report?: string): StepOf {
  return { ok: false, code: ErrorCode.InvalidParams, message, ...(report !== undefined && { report }) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
