import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import { builtInEvaluatorInfos, documentJsonSchemaText } from '../../src/gitops/json-schema.js';
import { createRegistryFromEnv, type EvaluatorInfo } from '../../src/evaluators/registry.js';
import { withExamples } from '../help.js';

export function registerSchema(program: Command): void {
  const command = program
    .command('schema')
    .description(
      'Print the JSON Schema of the YAML control files (for editor completion and checks); ' +
        'evaluator plugins named by GUARD_EVALUATORS are included',
    )
    .addOption(new Option('--format <format>', 'json, or the same schema written as YAML').choices(['json', 'yaml']).default('json'))
    .action(async (options: { format: 'json' | 'yaml' }) => {
      process.stdout.write(schemaText(options.format, await schemaEvaluators(process.env)));
    });
  withExamples(command, [
    ['the schema editors read (named on the first line of each YAML file)', 'guardctl schema > schema/guardctl.schema.json'],
    ['the same schema as YAML', 'guardctl schema --format yaml > guardctl.schema.yaml'],
    ['with your evaluator plugins', 'GUARD_EVALUATORS=./my-evaluators.js guardctl schema > guardctl.schema.json'],
  ]);
}

/** The built-in evaluators, plus the plugins GUARD_EVALUATORS names (loaded as the server would). */
export async function schemaEvaluators(env: Record<string, string | undefined>): Promise<EvaluatorInfo[]> {
  const infos = builtInEvaluatorInfos();
  if ((env.GUARD_EVALUATORS ?? '').trim() === '') return infos;
  const known = new Set(infos.map((i) => i.name));
  for (const info of (await createRegistryFromEnv(env)).list()) if (!known.has(info.name)) infos.push(info);
  return infos;
}

export function schemaText(format: 'json' | 'yaml', evaluators?: readonly EvaluatorInfo[]): string {
  const json = documentJsonSchemaText(evaluators);
  return format === 'json' ? json : stringify(JSON.parse(json), { lineWidth: 0 });
}
