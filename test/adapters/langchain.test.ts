/**
 * guardctl/langchain against the real @langchain/core: a tool-calling turn of its own
 * FakeStreamingChatModel decides the tool calls, and each is invoked as agents do
 * (`tool.invoke(toolCall)`), so a refusal is the ToolMessage the next model turn reads.
 */
import { AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { guardTool, guardTools, type GuardDecision } from '../../src/adapters/langchain.js';
import { ControlViolationError } from '../../src/sdk/index.js';
import { startGuarded, type GuardedSetup } from './guarded-agent.js';

let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

function makeTools() {
  const runSql = vi.fn(async ({ query }: { query: string }) => (query.includes('keys') ? 'AKIAQWERTYUIOPASDF7Z' : `3 rows for ${query}`));
  const deploy = vi.fn(async ({ environment }: { environment: string }) => `deployed to ${environment}`);
  return {
    runSql,
    deploy,
    list: [
      tool(runSql, { name: 'run_sql', description: 'run SQL', schema: z.object({ query: z.string() }) }),
      tool(deploy, { name: 'deploy', description: 'deploy', schema: z.object({ environment: z.string() }) }),
    ] as StructuredToolInterface[],
  };
}

/** One agent turn: the fake model asks for the tool call, the tool answers it. */
async function turn(tools: StructuredToolInterface[], name: string, args: Record<string, unknown>): Promise<ToolMessage> {
  const model = new FakeStreamingChatModel({
    chunks: [new AIMessageChunk({ content: '', tool_calls: [{ id: 'call-1', name, args, type: 'tool_call' }] })],
  });
  const messages: BaseMessage[] = [new HumanMessage('please')];
  const ai = await model.bindTools(tools).invoke(messages);
  expect(ai.tool_calls).toHaveLength(1);
  const call = ai.tool_calls![0]!;
  const chosen = tools.find((t) => t.name === call.name)!;
  return (await chosen.invoke(call)) as ToolMessage;
}

describe('guardTools', () => {
  it('keeps each tool’s name, description and schema', () => {
    const { list } = makeTools();
    const guarded = guardTools(setup.guard, list);
    expect(guarded.map((t) => [t.name, t.description])).toEqual([['run_sql', 'run SQL'], ['deploy', 'deploy']]);
    expect(guarded[0]!.schema).toBe(list[0]!.schema);
  });

  it('allows a harmless call: the tool runs and answers with its ToolMessage', async () => {
    const { list, runSql } = makeTools();
    const message = await turn(guardTools(setup.guard, list), 'run_sql', { query: 'select 1' });
    expect(runSql).toHaveBeenCalledTimes(1);
    expect(message).toBeInstanceOf(ToolMessage);
    expect(message).toMatchObject({ status: 'success', content: '3 rows for select 1', tool_call_id: 'call-1' });
  });

  it('answers a deny with a ToolMessage of status error, and the tool never runs', async () => {
    const { list, runSql } = makeTools();
    const decisions: GuardDecision[] = [];
    const message = await turn(guardTools(setup.guard, list, { onDecision: (d) => decisions.push(d) }), 'run_sql', { query: 'DROP TABLE orders' });
    expect(runSql).not.toHaveBeenCalled();
    expect(message).toMatchObject({ status: 'error', tool_call_id: 'call-1', name: 'run_sql' });
    expect(message.content).toContain('Blocked by control "block-drop"');
    expect(decisions.map((d) => [d.stage, d.verdict.decision, d.verdict.control_name])).toEqual([['pre', 'deny', 'block-drop']]);
  });

  it('answers a steer with the steering message and the required actions', async () => {
    const { list, deploy } = makeTools();
    const message = await turn(guardTools(setup.guard, list), 'deploy', { environment: 'production' });
    expect(deploy).not.toHaveBeenCalled();
    expect(message.status).toBe('error');
    expect(message.content).toContain('Production deploys need a dry run first.');
    expect(message.content).toContain('- call deploy with dry_run=true');
  });

  it('withholds an output a post control denies', async () => {
    const { list, runSql } = makeTools();
    const message = await turn(guardTools(setup.guard, list), 'run_sql', { query: 'select keys' });
    expect(runSql).toHaveBeenCalledTimes(1);
    expect(message.status).toBe('error');
    expect(JSON.stringify(message.content)).not.toContain('AKIA');
  });

  it('raises instead when invoked with plain arguments (no tool call to answer)', async () => {
    const { list } = makeTools();
    const guarded = guardTool(setup.guard, list[0]!);
    await expect(guarded.invoke({ query: 'DROP TABLE orders' })).rejects.toBeInstanceOf(ControlViolationError);
    await expect(guarded.invoke({ query: 'select 1' })).resolves.toBe('3 rows for select 1');
  });

  it('passes a content-and-artifact tool’s answer through unchanged', async () => {
    const withArtifact = tool(async () => ['2 rows', { rows: [1, 2] }] as [string, object], {
      name: 'run_sql', description: 'run SQL', schema: z.object({ query: z.string() }), responseFormat: 'content_and_artifact',
    });
    const message = await turn([guardTool(setup.guard, withArtifact)], 'run_sql', { query: 'select 2' });
    expect(message).toMatchObject({ status: 'success', content: '2 rows', artifact: { rows: [1, 2] } });
  });
});

describe('guardTools and a tool with no parameters (issue #35 item 2)', () => {
  it('runs it when called with empty arguments, checked pre and post', async () => {
    const listOrders = vi.fn(async () => '3 orders');
    const decisions: GuardDecision[] = [];
    const list = [tool(listOrders, { name: 'list_orders', description: 'list orders', schema: z.object({}) })] as StructuredToolInterface[];
    const message = await turn(guardTools(setup.guard, list, { onDecision: (d) => decisions.push(d) }), 'list_orders', {});
    expect(listOrders).toHaveBeenCalledTimes(1);
    expect(message.status).not.toBe('error');
    expect(message.content).toBe('3 orders');
    expect(decisions.map((d) => [d.stage, d.verdict.decision, d.verdict.unavailable])).toEqual([['pre', 'allow', false], ['post', 'allow', false]]);
  });

  it('runs it when invoked with plain empty arguments (no tool call)', async () => {
    const listOrders = vi.fn(async () => '3 orders');
    const [guarded] = guardTools(setup.guard, [tool(listOrders, { name: 'list_orders', description: 'list orders', schema: z.object({}) })] as StructuredToolInterface[]);
    await expect(guarded!.invoke({})).resolves.toBe('3 orders');
    expect(listOrders).toHaveBeenCalledTimes(1);
  });

  it('withholds a secret a zero-parameter tool returns', async () => {
    const list = [tool(async () => 'AKIAQWERTYUIOPASDF7Z', { name: 'read_keys', description: 'keys', schema: z.object({}) })] as StructuredToolInterface[];
    const message = await turn(guardTools(setup.guard, list), 'read_keys', {});
    expect(message.status).toBe('error');
    expect(JSON.stringify(message.content)).not.toContain('AKIA');
    expect(JSON.stringify(message.content)).not.toContain('could not be checked');
  });
});
