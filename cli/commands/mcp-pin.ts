/**
 * `guardctl mcp-pin`: connect to an MCP server, list its tools and write the
 * `kind: McpServer` document that pins them (docs/integrations.md). Re-pinning over an
 * existing file keeps its description and allow/deny lists; `guardctl plan` then shows
 * what changed in each tool for review.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { listServerTools, type ToolSource } from '../../src/adapters/mcp-list-tools.js';
import { pinDocument, pinYaml } from '../../src/gitops/mcp-pin.js';
import { UserError } from '../../src/errors.js';
import { McpServerNameSchema, type McpServerDocument, type McpTransport } from '../../src/model/index.js';
import { withExamples } from '../help.js';

interface McpPinFlags {
  name?: string;
  out?: string;
  upstreamUrl?: string;
  header?: string[];
  passEnv?: string[];
}

export function registerMcpPin(program: Command): void {
  const command = program
    .command('mcp-pin')
    .description('Pin an MCP server\'s tools: write a kind: McpServer document (its instructions; per tool title, description, schemas, annotations and fingerprint)')
    .usage('[--name <name>] [--out <file>] (-- <command> [args...] | --upstream-url <url>)')
    .argument('[command...]', 'the MCP server to start (after --), spoken to over stdio')
    .option('--name <name>', 'the McpServer name, as the gateway\'s --mcp-server-name (default: the name the server reports)')
    .option('--out <file>', 'write here (a re-pin keeps its description, allow_tools and deny_tools); default: standard output')
    .option('--upstream-url <url>', 'a streamable-HTTP MCP server instead of a command')
    .option('--header <name:value>', 'an HTTP header for --upstream-url (repeatable)', (v: string, all: string[] = []) => [...all, v])
    .option('--pass-env <NAME>', 'pass this variable to the started server (repeatable)', (v: string, all: string[] = []) => [...all, v])
    .action(async (args: string[], flags: McpPinFlags) => {
      process.exitCode = await runMcpPin(args, flags);
    });
  withExamples(command, [
    ['pin a server started over stdio into the controls directory', 'guardctl mcp-pin --name fs --out controls/mcp/fs.yaml -- node fs-server.js /srv'],
    ['pin a remote server', 'guardctl mcp-pin --name github --out controls/mcp/github.yaml --upstream-url https://mcp.example.com/mcp'],
  ]);
}

export async function runMcpPin(command: string[], flags: McpPinFlags): Promise<number> {
  if (flags.upstreamUrl !== undefined && command.length > 0) throw new UserError('give either a command after -- or --upstream-url, not both');
  let source: ToolSource;
  let transport: McpTransport;
  if (flags.upstreamUrl !== undefined) {
    if (!/^https?:\/\//i.test(flags.upstreamUrl)) throw new UserError(`--upstream-url "${flags.upstreamUrl}" is not an http(s) URL`);
    source = { url: flags.upstreamUrl, headers: headersOf(flags.header ?? []) };
    transport = { url: flags.upstreamUrl };
  } else {
    if (command.length === 0) throw new UserError('no MCP server to pin', 'give its command after --, for example: guardctl mcp-pin --name fs -- npx -y @modelcontextprotocol/server-filesystem /srv');
    source = { command, passEnv: flags.passEnv ?? [] };
    transport = { command };
  }
  const previous = flags.out !== undefined && existsSync(flags.out) ? readPrevious(flags.out) : undefined;
  const { serverName, instructions, tools } = await listServerTools(source).catch((error: unknown) => {
    throw new UserError(`could not list the MCP server's tools: ${error instanceof Error ? error.message : String(error)}`);
  });
  const name = flags.name ?? previous?.name ?? serverName ?? '';
  const checked = McpServerNameSchema.safeParse(name);
  if (!checked.success) throw new UserError(`"${name}" is not a valid McpServer name: ${checked.error.issues[0]?.message ?? ''}`, 'give one with --name');
  const listed = tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema, annotations: t.annotations }));
  const text = pinYaml(pinDocument(name, transport, listed, previous, instructions));
  if (flags.out === undefined) process.stdout.write(text);
  else {
    writeFileSync(flags.out, text);
    process.stderr.write(`pinned ${tools.length} tool${tools.length === 1 ? '' : 's'} of "${name}" in ${flags.out}\n`);
  }
  return 0;
}

/** What a re-pin keeps of the file it replaces; a file that is not an McpServer document is refused, not overwritten. */
function readPrevious(path: string): Pick<McpServerDocument, 'name' | 'description' | 'allow_tools' | 'deny_tools'> {
  let value: unknown;
  try {
    value = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UserError(`${path} is not readable YAML (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); not overwriting it`);
  }
  const doc = value as Partial<McpServerDocument> | null;
  if (doc === null || typeof doc !== 'object' || doc.kind !== 'McpServer') throw new UserError(`${path} is not a kind: McpServer document; not overwriting it`, 'give another --out');
  const list = (v: unknown) => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined);
  const out: Pick<McpServerDocument, 'name' | 'description' | 'allow_tools' | 'deny_tools'> = { name: typeof doc.name === 'string' ? doc.name : '' };
  if (typeof doc.description === 'string') out.description = doc.description;
  const allow = list(doc.allow_tools);
  const deny = list(doc.deny_tools);
  if (allow) out.allow_tools = allow;
  if (deny) out.deny_tools = deny;
  return out;
}

function headersOf(raw: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of raw) {
    const at = h.indexOf(':');
    if (at <= 0) throw new UserError(`--header "${h}" is not name:value`);
    headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
  }
  return headers;
}
