import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import { documentJsonSchemaText } from '../../src/gitops/json-schema.js';
import { withExamples } from '../help.js';

export function registerSchema(program: Command): void {
  const command = program
    .command('schema')
    .description('Print the JSON Schema of the YAML control files (for editor completion and checks)')
    .addOption(new Option('--format <format>', 'json, or the same schema written as YAML').choices(['json', 'yaml']).default('json'))
    .action((options: { format: 'json' | 'yaml' }) => {
      process.stdout.write(schemaText(options.format));
    });
  withExamples(command, [
    ['the schema editors read (named on the first line of each YAML file)', 'guardctl schema > schema/guardctl.schema.json'],
    ['the same schema as YAML', 'guardctl schema --format yaml > guardctl.schema.yaml'],
  ]);
}

export function schemaText(format: 'json' | 'yaml'): string {
  const json = documentJsonSchemaText();
  return format === 'json' ? json : stringify(JSON.parse(json), { lineWidth: 0 });
}
