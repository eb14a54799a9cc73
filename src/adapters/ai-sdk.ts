/**
 * `guardctl/ai-sdk`: the Vercel AI SDK (`ai`, v6).
 *
 *   const tools = guardTools(guard, { run_sql: tool({ ... }) });
 *   const model = wrapLanguageModel({ model: openai('gpt-4o'), middleware: guardModel(guard) });
 *
 * A tool's `execute` is checked before it runs (`pre`, the tool's key as the step name,
 * its input as the step input) and its output after (`post`). A deny or steer is thrown
 * as ControlViolationError or ControlSteerError: the AI SDK hands the error's message to
 * the model as the tool's error and keeps the error itself in the result's steps
 * (`tool-error` parts), and `onDecision` sees every verdict. Model calls are `llm` steps
 * checked by the middleware; a deny or steer there rejects the call.
 *
 * Approvals (docs/approvals.md): a tool an ask control holds needs the AI SDK's tool
 * approval. `needsApproval` checks the call first; on a pending ask the result has a
 * `tool-approval-request` part, and `guardApprovalOf(guard, part)` names guardctl's
 * approval for the application to show. The tool runs, once the application answers with
 * a `tool-approval-response`, only if guardctl's approval of that exact call is approved
 * (by a person through guardctl, or by the application with `decideApproval` and its
 * approver key): execute checks again, and a still pending approval waits (or, with
 * `approval: 'throw'` on init, fails). `approval: 'wait'` here keeps the call waiting instead.
 *
 * Sessions (docs/sessions.md): the tool steps of one generateText or streamText call share
 * one session, unless `sessionId` is given (here or to `init`); a call made inside a
 * guarded tool's execute, or while the iterable it returns is read (a subagent), shares
 * that tool call's. The call is told by its
 * messages, the objects the AI SDK hands every step of the call: a step whose messages
 * begin with the very objects of an earlier step's, in order, and go on with that step's
 * answer (the model's message, asking for its tool calls if for any), continues its
 * session; a call over other messages, over the very same ones again, or over them and
 * then a request of its own, starts another. A step that continues none of those goes on
 * in the session of the tool calls the model asked for since the user's last request, when
 * this process checked one (a call that resumes a run interrupted for a tool approval or a
 * tool the client runs, over new message objects).
 * Model steps (guardModel) take the given sessionId only.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LanguageModelMiddleware, ModelMessage, ToolExecutionOptions, ToolSet } from 'ai';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import { CallSessions } from './call-sessions.js';
import { withFileTexts } from './model-output-files.js';
import { decide, enforce, parseJsonText, report, sessionOf, type AdapterOptions } from './decisions.js';
import {
  approvalOfCall, isPendingAsk, keepVerdict, rememberApproval, takeVerdict, type FrameworkApprovalMode, type GuardApproval,
} from './framework-approval.js';

export type { AdapterOptions, GuardDecision } from './decisions.js';
export { decideApproval, type DecideApprovalOptions, type FrameworkApprovalMode, type GuardApproval } from './framework-approval.js';

export interface GuardToolsOptions extends AdapterOptions {
  /** What an ask does: `framework` (default) asks through the AI SDK's tool approval; `wait` holds the call until decided. */
  approval?: FrameworkApprovalMode;
}

type Execute = (input: unknown, options: ToolExecutionOptions) => unknown;
type ApprovalOptions = { toolCallId: string; messages: ModelMessage[]; experimental_context?: unknown };
type NeedsApproval = boolean | ((input: unknown, options: ApprovalOptions) => boolean | PromiseLike<boolean>) | undefined;

/**
 * The same tools, each `execute` checked pre and post. Tools without `execute` (run by
 * the client, not here) are returned unchanged: there is nothing here to guard.
 */
export function guardTools<TOOLS extends ToolSet>(guard: GuardAgent, tools: TOOLS, options: GuardToolsOptions = {}): TOOLS {
  const guarded: Record<string, unknown> = {};
  for (const [name, original] of Object.entries(tools)) {
    const execute = original.execute as Execute | undefined;
    if (typeof execute !== 'function') {
      guarded[name] = original;
      continue;
    }
    // The AI SDK tells a streaming tool by what execute returns at once (an async
    // iterable), so an async generator stays one.
    const checked = isAsyncGeneratorFunction(execute)
      ? async function* (input: unknown, callOptions: ToolExecutionOptions): AsyncGenerator<unknown> {
          const step: StepInput = { type: 'tool', name, input };
          const session = sessionOfCall(callOptions);
          await checkBefore(guard, step, options, session, callOptions);
          yield* checkedStream(guard, step, execute(input, callOptions) as AsyncIterable<unknown>, options, session);
        }
      : async (input: unknown, callOptions: ToolExecutionOptions): Promise<unknown> => {
          const step: StepInput = { type: 'tool', name, input };
          const session = sessionOfCall(callOptions);
          await checkBefore(guard, step, options, session, callOptions);
          // An iterable from a plain function cannot stream through here: its last output is
          // the result. It is read within the call too: its body runs as it is read, and a
          // subagent it runs belongs to the call's session.
          const output: unknown = await withinCall(guard, options, session, async () => {
            const returned: unknown = await execute(input, callOptions);
            return isAsyncIterable(returned) ? (await collect(returned)).at(-1) : returned;
          });
          await enforce(guard, { ...step, output }, 'post', options, session);
          return output;
        };
    const own = original.toModelOutput as ModelOutputOf | undefined;
    const shown = typeof own === 'function' ? { toModelOutput: modelOutputCheck(guard, name, own, options) } : {};
    guarded[name] =
      options.approval === 'wait'
        ? { ...original, ...shown, execute: checked }
        : { ...original, ...shown, execute: checked, needsApproval: approvalCheck(guard, name, original.needsApproval as NeedsApproval, options) };
  }
  return guarded as TOOLS;
}

/**
 * The tool's `needsApproval`: the tool's own first; then the pre check of the call. A
 * pending ask needs approval; any other verdict is kept for execute, which then does not
 * check (and count) the call a second time. A call the application already answered needs
 * approval again without a check: the AI SDK runs it only then, and execute checks it.
 */
function approvalCheck(guard: GuardAgent, name: string, own: NeedsApproval, options: GuardToolsOptions) {
  return async (input: unknown, approvalOptions: ApprovalOptions): Promise<boolean> => {
    // The call is known to its session before the run can be interrupted for it: the call
    // that resumes the run goes on in that session (sessionOfAnswers).
    const derived = sessionOfCall(approvalOptions);
    if (own === true || (typeof own === 'function' && (await own(input, approvalOptions)))) return true;
    if (isAnswered(approvalOptions.messages, approvalOptions.toolCallId)) return true;
    const step: StepInput = { type: 'tool', name, input };
    const sessionId = sessionOf(guard, options, derived);
    const verdict = await guard.verdict(step, 'pre', sessionId === undefined ? {} : { sessionId });
    report(options, step, 'pre', verdict, sessionId);
    if (isPendingAsk(verdict)) {
      rememberApproval(guard, approvalOptions.toolCallId, step, verdict);
      if (derived !== undefined) toolCallSessions.asked(approvalOptions.toolCallId, derived);
      return true;
    }
    keepVerdict(guard, approvalOptions.toolCallId, step, verdict);
    return false;
  };
}

type ModelOutputOf = (options: { toolCallId: string; input: unknown; output: unknown }) => unknown;

/**
 * The tool's own `toModelOutput`, its answer checked post as the tool's output: it is what
 * the model is handed, which may say more than the output execute's post check read (a
 * file's base64 decoded, a record looked up by the id the output holds). Controls read its
 * value (the text, the JSON, the content parts, a file part's text beside its bytes). A verdict that withholds it (a deny, a
 * steer, a check that failed) hands the model its message as error text instead.
 */
function modelOutputCheck(guard: GuardAgent, name: string, own: ModelOutputOf, options: AdapterOptions): ModelOutputOf {
  return async (callOutput) => {
    const shown = (await own(callOutput)) as { type?: unknown; value?: unknown } | null;
    const output = typeof shown === 'object' && shown !== null && 'value' in shown ? withFileTexts(shown.value) : shown;
    const verdict = await decide(guard, { type: 'tool', name, input: callOutput.input, output }, 'post', options, toolCallSessions.sessionOf(callOutput.toolCallId));
    return verdict.error ? { type: 'error-text', value: verdict.error.message } : shown;
  };
}

/** The pre check of execute: the verdict needsApproval kept for this call, else a check now. */
async function checkBefore(guard: GuardAgent, step: StepInput, options: GuardToolsOptions, session: string | undefined, callOptions: ToolExecutionOptions): Promise<void> {
  const kept = takeVerdict(guard, callOptions?.toolCallId, step);
  if (kept === undefined) return enforce(guard, step, 'pre', options, session);
  if (kept.error) throw kept.error;
}

/** Whether the messages hold a tool-approval-request of this call: it was asked about, and is now answered. */
function isAnswered(messages: readonly ModelMessage[], toolCallId: string): boolean {
  return messages.some(
    (m) => m.role === 'assistant' && Array.isArray(m.content) && m.content.some((p) => p.type === 'tool-approval-request' && p.toolCallId === toolCallId),
  );
}

/**
 * guardctl's approval behind a tool-approval-request part of a result (or a UI message's
 * tool part): its id, status and expiry for the application to show. Undefined for a call
 * that needs approval for another reason (the tool's own needsApproval).
 */
export function guardApprovalOf(guard: GuardAgent, part: { toolCall: { toolCallId: string } } | { toolCallId: string }): GuardApproval | undefined {
  return approvalOfCall(guard, 'toolCall' in part ? part.toolCall.toolCallId : part.toolCallId);
}

/**
 * A streaming tool (an `execute` that yields preliminary outputs) is held back until its
 * last output, the tool's result, has passed the post check: what a deny withholds must
 * not have been shown as a preliminary result. Only that output is passed on: the post
 * check read no other, and an earlier one may hold what a control withholds (a preview of
 * the file the result only sums up); held back, they would all arrive at once anyway.
 */
async function* checkedStream(guard: GuardAgent, step: StepInput, stream: AsyncIterable<unknown>, options: AdapterOptions, session: string | undefined): AsyncGenerator<unknown> {
  const outputs = await withinCall(guard, options, session, () => collect(stream));
  await enforce(guard, { ...step, output: outputs.at(-1) }, 'post', options, session);
  if (outputs.length > 0) yield outputs.at(-1);
}

/**
 * The tool call whose execute is running, and its session. A generateText or streamText
 * call made inside it (a subagent) belongs to that session: what the subagent read decides
 * the steps of the call that ran it, and that call's labels the subagent's steps. Only
 * while it runs: work it started that goes on after it answered (a worker it spawned)
 * takes no session from it.
 */
const enclosingCall = new AsyncLocalStorage<{ session: string | undefined; running: boolean }>();

/** Runs a tool's execute (or its stream) within its call, in the session its checks take. */
async function withinCall<T>(guard: GuardAgent, options: AdapterOptions, derived: string | undefined, run: () => T | PromiseLike<T>): Promise<T> {
  const call = { session: sessionOf(guard, options, derived), running: true };
  try {
    return await enclosingCall.run(call, run);
  } finally {
    call.running = false;
  }
}

/**
 * Sessions by message object: every message of a step a tool ran in, with the session and
 * the messages of that step (weak: a finished conversation's go with it). Not
 * the first message: an application may begin every call with the same object (a system
 * prompt held in a constant), which made the calls of every user one session. Nor the
 * newest alone: a call may end with a shared object too (a reminder in a constant).
 */
const messageSessions = new WeakMap<object, StepMessages[]>();

/** The session of one step, and the messages it was handed. */
interface StepMessages {
  id: string;
  messages: readonly unknown[];
}

/**
 * How many sessions a message object keeps (the first step of each that it was handed):
 * one, unless the object is shared by many calls; a shared object's oldest are let go, so
 * a constant holds no conversation forever.
 */
const SESSIONS_PER_MESSAGE = 32;

/**
 * The session of a call's step: that of the tool call it runs inside (a subagent), else
 * that of an earlier step whose messages this step's begin with, object for object (the
 * call's later steps, and a call that goes on with its conversation, add messages after
 * them), else that of the tool calls its messages answer, else a new one. Two calls that
 * share a message object but not the messages before it, or share all of them, are two
 * sessions.
 */
function sessionOfCall(callOptions: { messages?: readonly unknown[]; toolCallId?: string } | undefined): string | undefined {
  const messages = callOptions?.messages;
  const newest: unknown = messages?.at(-1);
  if (messages === undefined || typeof newest !== 'object' || newest === null) return undefined;
  const enclosing = enclosingCall.getStore();
  let id = enclosing?.running === true ? enclosing.session : undefined;
  for (let i = messages.length - 1; i >= 0 && id === undefined; i--) {
    const m = messages[i];
    if (typeof m !== 'object' || m === null) continue;
    const found = messageSessions.get(m)?.filter((step) => continues(messages, step.messages));
    if (found !== undefined && found.length > 0) id = found.length === 1 ? found[0]!.id : ownOf(messages, found);
  }
  id ??= sessionOfAnswers(messages) ?? `ai-sdk:${globalThis.crypto.randomUUID()}`;
  const toolCallId = callOptions?.toolCallId;
  if (typeof toolCallId === 'string') {
    const calls = stepCalls.get(messages);
    if (calls === undefined) stepCalls.set(messages, new Set([toolCallId]));
    else calls.add(toolCallId);
    toolCallSessions.checked(toolCallId, id);
  }
  // Kept under each of the step's messages: a shared object lets its oldest sessions go,
  // and the call's next step must still find this one under the objects it does not share.
  for (const m of messages) if (typeof m === 'object' && m !== null) remember(m, id, messages);
  return id;
}

/** Keeps the step under the message, unless the message holds an earlier step of the session. */
function remember(message: object, id: string, messages: readonly unknown[]): void {
  const steps = messageSessions.get(message);
  if (steps === undefined) {
    messageSessions.set(message, [{ id, messages }]);
    return;
  }
  if (steps.some((step) => step.id === id)) return;
  steps.push({ id, messages });
  if (steps.length > SESSIONS_PER_MESSAGE) steps.shift();
}

/**
 * The session of the tool calls the model asked for in an earlier step (its answers are in
 * the messages), by the call ids the provider gave them: what tells apart two calls over
 * the very same messages (two runs of a scheduled job) once both are under way; and of the
 * calls guardctl asked a person about, which a run resumes from once the person answers.
 */
const toolCallSessions = new CallSessions();

/**
 * The ids of the tool calls each step ran, by the list of messages the step was handed
 * (weak: they go with the step's messages). A later step of the call, and a call that
 * goes on with its conversation, follow the step's messages with its answer: the model's
 * message asking for these calls.
 */
const stepCalls = new WeakMap<readonly unknown[], Set<string>>();

/**
 * The session of the tool calls the model asked for since the user's last request (the
 * messages go on from it with the model's answers, tool results and answers to approval
 * requests only), when this process checked one; the newest first. It tells a step that
 * continues no step remembered by its message objects: a call that resumes a run
 * interrupted for a tool approval or a tool the client runs, whose conversation a chat
 * client sends back as new objects, and a step of a run whose messages are all shared
 * objects (constants) that more than SESSIONS_PER_MESSAGE other calls were handed since.
 */
function sessionOfAnswers(messages: readonly unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const { role, content } = (messages[i] ?? {}) as { role?: unknown; content?: unknown };
    if (role === 'tool') continue;
    if (role !== 'assistant') return undefined;
    if (!Array.isArray(content)) continue;
    for (const part of content as Array<{ type?: unknown; toolCallId?: unknown } | null>) {
      const id = part?.type === 'tool-call' && typeof part.toolCallId === 'string' ? toolCallSessions.sessionOf(part.toolCallId) : undefined;
      if (id !== undefined) return id;
    }
  }
  return undefined;
}

/** Of several sessions whose steps the messages go on from, the one that ran their tool calls; else the newest. */
function ownOf(messages: readonly unknown[], found: readonly StepMessages[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = (messages[i] as { role?: unknown; content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content as Array<{ type?: unknown; toolCallId?: unknown }>) {
      if (part?.type !== 'tool-call' || typeof part.toolCallId !== 'string') continue;
      const id = toolCallSessions.sessionOf(part.toolCallId);
      if (id !== undefined && found.some((step) => step.id === id)) return id;
    }
  }
  return found.at(-1)!.id;
}

/**
 * Whether `messages` are those of the step `earlier` was handed (the AI SDK hands every
 * tool of one step the same list), or begin with its very objects, in order, and go on
 * with that step's answer (the model's message, asking for a tool call the step ran if it
 * asks for any).
 * Another list of the same objects is another call over the same messages (a scheduled
 * job's prompt held in a constant), not a later step: every step adds the model's answer.
 * So is a list that goes on with anything else: a user's call may begin with the very
 * objects another call was made of (a system prompt and a task held in constants) and add
 * its own request.
 */
function continues(messages: readonly unknown[], earlier: readonly unknown[]): boolean {
  if (earlier === messages) return true;
  return earlier.length < messages.length && earlier.every((m, i) => messages[i] === m) && answers(messages[earlier.length], stepCalls.get(earlier));
}

/**
 * Whether the message is the model's answer to the step: asking for one of the tool calls
 * the step ran, or (a conversation that keeps only the text of the answers) for none.
 */
function answers(message: unknown, calls: ReadonlySet<string> | undefined): boolean {
  const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown };
  if (role !== 'assistant') return false;
  const asked = Array.isArray(content) ? (content as Array<{ type?: unknown; toolCallId?: unknown } | null>).filter((part) => part?.type === 'tool-call') : [];
  return asked.length === 0 || asked.some((part) => typeof part!.toolCallId === 'string' && calls?.has(part!.toolCallId) === true);
}

/**
 * A stream's outputs, each as the AI SDK is handed it: resolved. An async generator that
 * delegates (`yield*`) passes on an inner iterator's promise as it is, and the outputs are
 * yielded on from an array, which awaits each: the post check reads what the model gets.
 */
async function collect(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const outputs: unknown[] = [];
  for await (const output of stream) outputs.push(await output);
  return outputs;
}

function isAsyncGeneratorFunction(fn: unknown): boolean {
  return Object.prototype.toString.call(fn) === '[object AsyncGeneratorFunction]';
}

export interface GuardModelOptions extends AdapterOptions {
  /** The step name of the model's calls; default: the model's id (`gpt-4o`, ...). */
  stepName?: string;
}

type Prompt = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0]['params']['prompt'];
type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
type Content = GenerateResult['content'];

/**
 * A language-model middleware that checks each model call: `pre` with the prompt as the
 * input (the AI SDK's message list), `post` with `{text, tool_calls}` as the output
 * (and reasoning, files, provider tools' results: outputOf). A
 * streamed answer is buffered until the post check passes, so a denied answer is never
 * partly shown.
 */
export function guardModel(guard: GuardAgent, options: GuardModelOptions = {}): LanguageModelMiddleware {
  const stepOf = (modelId: string, prompt: Prompt): StepInput => ({ type: 'llm', name: options.stepName ?? modelId, input: prompt });
  return {
    specificationVersion: 'v3',
    async wrapGenerate({ doGenerate, params, model }) {
      const step = stepOf(model.modelId, params.prompt);
      await enforce(guard, step, 'pre', options);
      const result = await doGenerate();
      await enforce(guard, { ...step, output: outputOf(result.content) }, 'post', options);
      return result;
    },
    async wrapStream({ doStream, params, model }) {
      const step = stepOf(model.modelId, params.prompt);
      await enforce(guard, step, 'pre', options);
      const { stream, ...rest } = await doStream();
      const parts: unknown[] = [];
      const reader = stream.getReader();
      for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
      await enforce(guard, { ...step, output: outputOf(streamedContent(parts)) }, 'post', options);
      return { ...rest, stream: replay(parts) as typeof stream };
    },
  };
}

/** What a post check sees of a model's answer. */
interface ModelAnswer {
  text: string;
  tool_calls: Array<{ name: string; input: unknown }>;
  reasoning?: string;
  files?: Array<{ media_type: string; text?: string }>;
  tool_results?: Array<{ name: string; output: unknown }>;
}

/**
 * What a post check sees of a model's answer: its text, the tools it asked for, and, when
 * it gave any, its reasoning (an application may show it, and a provider sends it back),
 * the files it wrote (a text file's text) and what the tools the provider ran answered
 * (a code execution's output, a page fetched): the application is handed all of them.
 */
function outputOf(content: Content): ModelAnswer {
  const answer: ModelAnswer = { text: '', tool_calls: [] };
  for (const part of content) {
    if (part.type === 'text') answer.text += part.text;
    else if (part.type === 'reasoning') answer.reasoning = (answer.reasoning ?? '') + part.text;
    else if (part.type === 'tool-call') answer.tool_calls.push({ name: part.toolName, input: parseJsonText(part.input) });
    else if (part.type === 'file') (answer.files ??= []).push(fileOf(part.mediaType, part.data));
    else if (part.type === 'tool-result') (answer.tool_results ??= []).push({ name: part.toolName, output: part.result });
  }
  return answer;
}

/** A file the model wrote, as a check reads it: its media type, and its text when its bytes are text. */
function fileOf(mediaType: string, data: string | Uint8Array): { media_type: string; text?: string } {
  const [read] = withFileTexts([{ data, mediaType }]) as Array<{ text?: string }>;
  return read?.text === undefined ? { media_type: mediaType } : { media_type: mediaType, text: read.text };
}

/** The content parts a stream amounts to (text deltas joined; tool calls, files and provider tools' results as they come). */
function streamedContent(parts: readonly unknown[]): Content {
  const content: Array<Content[number]> = [];
  let text = '';
  let reasoning: string | undefined;
  for (const part of parts as Array<{ type: string; delta?: string }>) {
    if (part.type === 'text-delta') text += part.delta ?? '';
    else if (part.type === 'reasoning-delta') reasoning = (reasoning ?? '') + (part.delta ?? '');
    else if (part.type === 'tool-call' || part.type === 'file' || part.type === 'tool-result') content.push(part as Content[number]);
  }
  if (reasoning !== undefined) content.unshift({ type: 'reasoning', text: reasoning });
  content.unshift({ type: 'text', text });
  return content;
}

function replay(parts: readonly unknown[]): ReadableStream<unknown> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}
