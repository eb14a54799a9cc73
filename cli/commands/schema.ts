import type { Command } from 'commander';
import { documentJsonSchemaText } from '../../src/gitops/json-schema.js';

export function registerSchema(program: Command): void {
  program
    .command('schema')
    .description('Print the JSON Schema of the YAML control files (for editor completion)')
    .option('--format <format>', 'output format (the schema is JSON)', 'json')
    .action(() => {
      process.stdout.write(documentJsonSchemaText());
    });
}
