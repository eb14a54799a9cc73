/**
 * Every type named in a public signature of an SDK entry point is exported from that entry
 * point, so an adapter (or an agent) can name it: a type reachable only through
 * `import('…/dist/src/model/common.js')` cannot be imported from the package.
 */
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const entries = ['src/sdk/index.ts', 'src/adapters/ai-sdk.ts', 'src/adapters/langchain.ts', 'src/adapters/openai-agents.ts', 'src/adapters/mcp.ts'];

const configFile = ts.readConfigFile(`${root}tsconfig.json`, (p) => ts.sys.readFile(p));
const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, root);
const program = ts.createProgram(entries.map((e) => `${root}${e}`), parsed.options);
const checker = program.getTypeChecker();

function resolved(symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

function isOurs(decl: ts.Declaration): boolean {
  const file = decl.getSourceFile().fileName;
  return file.startsWith(root) && !file.includes('/node_modules/');
}

function isHidden(node: ts.Node): boolean {
  if (ts.isClassElement(node) || ts.isParameter(node)) {
    if (node.name && ts.isPrivateIdentifier(node.name)) return true;
    const flags = ts.getCombinedModifierFlags(node);
    return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0 && !ts.isParameter(node);
  }
  return false;
}

/** Names of our own types referenced by the public parts of a declaration. */
function referencedTypes(decl: ts.Node, out: Map<ts.Symbol, string>): void {
  const visit = (node: ts.Node): void => {
    if (isHidden(node)) return;
    // Bodies and initialisers are implementation, not signature.
    if (ts.isBlock(node) || (ts.isVariableDeclaration(node) && node.type === undefined)) return;
    if (ts.isPropertyDeclaration(node) && node.initializer && node.type === undefined) return;
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      const at = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      const symbol = checker.getSymbolAtLocation(at);
      if (symbol) {
        const target = resolved(symbol);
        const d = target.declarations?.[0];
        if (d && isOurs(d) && !(target.flags & ts.SymbolFlags.TypeParameter)) out.set(target, `${target.name} (${d.getSourceFile().fileName.slice(root.length)})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(decl);
}

function exportsOf(entry: string): ts.Symbol[] {
  const file = program.getSourceFile(`${root}${entry}`);
  expect(file, entry).toBeDefined();
  return checker.getExportsOfModule(checker.getSymbolAtLocation(file!)!).map(resolved);
}

describe('public types of the SDK and its adapters', () => {
  for (const entry of entries) {
    // An adapter's users import the SDK too: what guardctl/sdk exports needs no re-export.
    it(`${entry} exports every type its public signatures name${entry === entries[0] ? '' : ' (or guardctl/sdk does)'}`, () => {
      const exported = exportsOf(entry);
      const exportedSet = new Set(entry === entries[0] ? exported : [...exported, ...exportsOf(entries[0]!)]);
      const referenced = new Map<ts.Symbol, string>();
      for (const symbol of exported) for (const d of symbol.declarations ?? []) if (isOurs(d)) referencedTypes(d, referenced);
      const missing = [...referenced].filter(([symbol]) => !exportedSet.has(symbol)).map(([, name]) => name);
      expect(missing).toEqual([]);
    });
  }
});
