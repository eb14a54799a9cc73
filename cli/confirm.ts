/**
 * apply's question before it changes anything, asked only of a person: stdin a terminal,
 * not CI, no --auto-approve. Without a terminal (CI, pipes, cron) apply never waits for an
 * answer nobody can give; it applies, as it always did.
 */
import { createInterface } from 'node:readline';

export interface PromptIo {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
}

type Env = Record<string, string | undefined>;

/** CI systems set CI (GitHub, GitLab, CircleCI, ...) or CONTINUOUS_INTEGRATION. */
export function isCi(env: Env): boolean {
  return ['CI', 'CONTINUOUS_INTEGRATION'].some((k) => env[k] !== undefined && env[k] !== '0' && env[k] !== 'false');
}

export function shouldAsk(autoApprove: boolean | undefined, io: Pick<PromptIo, 'input'>, env: Env = process.env): boolean {
  return !autoApprove && io.input.isTTY === true && !isCi(env);
}

/** Asks `question`; true only for the answer "yes" (Terraform's rule: nothing else applies). */
export async function confirm(question: string, io: PromptIo): Promise<boolean> {
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  try {
    io.output.write(question);
    const answer = await new Promise<string | null>((resolve) => {
      rl.once('line', resolve);
      // End of input (Ctrl+D) is a no.
      rl.once('close', () => resolve(null));
    });
    return answer?.trim() === 'yes';
  } finally {
    rl.close();
  }
}
