/**
 * Sends the gateway's drift reports (mcp-pins.ts `onDrift`) to the guard server, one at a
 * time and in the background: the pins have decided already, so a report that fails or
 * waits never holds a call or a tools/list answer. A failure is said once (then again only
 * after a report got through), and the queue is bounded: past it reports are dropped,
 * said once too. Nothing is retried: the next document version reports its drifts again.
 */
import type { McpDriftReportInput } from '../model/index.js';
import type { Drift, OnDrift } from './mcp-pins.js';

export interface DriftReporterOptions {
  agentName: string;
  mode: OnDrift;
  /** Posts one report (client.mcpServers.reportDrift). */
  send(server: string, report: McpDriftReportInput): Promise<unknown>;
  /** Where the gateway says things (stderr). */
  say(line: string): void;
  /** Reports waiting at most (default 1000). */
  maxQueued?: number;
}

export class DriftReporter {
  readonly #queue: Drift[] = [];
  #sending: Promise<void> | null = null;
  #failing = false;
  #droppedSaid = false;

  constructor(private readonly o: DriftReporterOptions) {}

  /** Queues one drift; returns at once. */
  report(drift: Drift): void {
    if (this.#queue.length >= (this.o.maxQueued ?? 1000)) {
      if (!this.#droppedSaid) this.o.say(`drift reports are arriving faster than the guard server takes them; dropping the ones past ${this.#queue.length} waiting`);
      this.#droppedSaid = true;
      return;
    }
    this.#queue.push(drift);
    this.#sending ??= this.#drain().finally(() => {
      this.#sending = null;
    });
  }

  /** Resolves when every queued report was sent or failed (for tests and a clean exit). */
  async idle(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  async #drain(): Promise<void> {
    for (let drift = this.#queue.shift(); drift; drift = this.#queue.shift()) {
      const report: McpDriftReportInput =
        drift.kind === 'instructions'
          ? { agent_name: this.o.agentName, kind: drift.kind, fingerprint: drift.fingerprint, on_drift: this.o.mode }
          : { agent_name: this.o.agentName, tool: drift.tool, kind: drift.kind, fingerprint: drift.fingerprint, on_drift: this.o.mode };
      try {
        await this.o.send(drift.server, report);
        this.#failing = false;
      } catch (error) {
        if (!this.#failing) {
          this.o.say(`could not report drift of ${drift.kind === 'instructions' ? 'the instructions' : `tool "${drift.tool}"`} to the guard server (the pins still decide here; further failures are not said): ${error instanceof Error ? error.message : String(error)}`);
        }
        this.#failing = true;
      }
    }
    this.#droppedSaid = false;
  }
}
