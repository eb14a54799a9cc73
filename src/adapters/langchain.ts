/**
 * `guardctl/langchain`: LangChain.js tools (`@langchain/core`, v1).
 *
 *   const tools = guardTools(guard, [runSql, deploy]);
 *
 * A guarded tool keeps the tool's name, description and schema. Its input is checked
 * before the tool runs (`pre`) and its output after (`post`). Invoked with a tool call (as
 * agents invoke tools), a deny or steer answers with a ToolMessage of `status: 'error'`
 * whose content is the verdict's text for the model; invoked with plain arguments, it
 * raises ControlViolationError or ControlSteerError instead.
 *
 * Sessions (docs/sessions.md): unless `sessionId` is given (here or to `init`), a tool's
 * steps belong to the session of its LangGraph thread (`configurable.thread_id`), else of
 * the run it was invoked in: the trace's root run when a tracer knows it, else the tool's
 * parent run (the tools one runnable invokes share it).
 */
import type { CallbackManagerForToolRun } from '@langchain/core/callbacks/manager';
import { ToolMessage } from '@langchain/core/messages';
import { StructuredTool, type StructuredToolInterface, type ToolRunnableConfig } from '@langchain/core/tools';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { decide, derivedSessionId, type AdapterOptions } from './decisions.js';

export type { AdapterOptions, GuardDecision } from './decisions.js';

export type GuardToolOptions = AdapterOptions;

class GuardedTool extends StructuredTool {
  name: string;
  description: string;
  schema: StructuredToolInterface['schema'];

  constructor(
    private readonly inner: StructuredToolInterface,
    private readonly guard: GuardAgent,
    private readonly options: GuardToolOptions,
  ) {
    // The inner tool shapes its own answer (content, artifact, ToolMessage); this one
    // passes it on as it is, so it keeps the default response format.
    const fields = inner as Partial<Pick<StructuredTool, 'verboseParsingErrors' | 'metadata' | 'tags'>>;
    super({ verboseParsingErrors: fields.verboseParsingErrors, metadata: fields.metadata, tags: fields.tags });
    this.name = inner.name;
    this.description = inner.description;
    this.schema = inner.schema;
    this.returnDirect = inner.returnDirect;
    if (inner.extras) this.extras = inner.extras;
  }

  protected override async _call(arg: unknown, runManager?: CallbackManagerForToolRun, config?: ToolRunnableConfig): Promise<unknown> {
    const step: StepInput = { type: 'tool', name: this.name, input: arg };
    const session = sessionOfRun(config, runManager);
    const pre = await decide(this.guard, step, 'pre', this.options, session);
    if (pre.decision !== 'allow') return this.#refusal(pre, config);
    const answer: unknown = await this.inner.invoke(arg, { ...config, callbacks: runManager?.getChild() });
    const output = ToolMessage.isInstance(answer) ? answer.content : answer;
    const post = await decide(this.guard, { ...step, output }, 'post', this.options, session);
    if (post.decision !== 'allow') return this.#refusal(post, config);
    return answer;
  }

  #refusal(verdict: Verdict, config: ToolRunnableConfig | undefined): ToolMessage {
    const id = config?.toolCall?.id;
    if (id === undefined) throw verdict.error!;
    return new ToolMessage({ status: 'error', content: verdict.message!, tool_call_id: id, name: this.name });
  }
}

/** The LangGraph thread, else the root of the tool's run tree when a tracer holds it, else its parent run. */
function sessionOfRun(config: ToolRunnableConfig | undefined, runManager: CallbackManagerForToolRun | undefined): string | undefined {
  const thread: unknown = config?.configurable?.thread_id;
  if (typeof thread === 'string' && thread !== '') return derivedSessionId('langchain:thread', String(thread));
  if (typeof thread === 'number') return derivedSessionId('langchain:thread', String(thread));
  const root = rootRunOf(runManager);
  return root === undefined ? undefined : derivedSessionId('langchain:run', root);
}

/** LangChain's run managers know their parent run; a tracer handler knows the root of the tree. */
function rootRunOf(runManager: CallbackManagerForToolRun | undefined): string | undefined {
  if (runManager === undefined) return undefined;
  for (const handler of runManager.handlers) {
    const runMap = (handler as { runMap?: Map<string, { id: string; parent_run_id?: string; trace_id?: string }> }).runMap;
    const run = runMap?.get(runManager.runId);
    if (run?.trace_id !== undefined) return run.trace_id;
  }
  return runManager.parentRunId ?? runManager.runId;
}

/** The tool, checked pre and post; see the module comment. */
export function guardTool<T extends StructuredToolInterface>(guard: GuardAgent, tool: T, options: GuardToolOptions = {}): T {
  return new GuardedTool(tool, guard, options) as unknown as T;
}

export function guardTools<T extends StructuredToolInterface>(guard: GuardAgent, tools: readonly T[], options: GuardToolOptions = {}): T[] {
  return tools.map((tool) => guardTool(guard, tool, options));
}
