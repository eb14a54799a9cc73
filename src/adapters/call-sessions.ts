/**
 * The sessions of the tool calls an adapter checked, by the call ids the framework gave
 * them: a run resumed after a person's answer (or sent back as new objects) is found again
 * by the calls it goes on from (ai-sdk.ts, openai-agents.ts).
 *
 * Two bounded maps, each keeping its newest `kept` calls. The calls guardctl asked a person
 * about are kept apart from the others: the run resumes from such a call once the person
 * answers, which may take longer than the process takes to check `kept` other calls. Each
 * is a pending approval on the server, so these are few.
 */
export class CallSessions {
  readonly #checked = new Map<string, string>();
  readonly #asked = new Map<string, string>();

  constructor(private readonly kept = 10_000) {}

  /** A call checked in `session`. */
  checked(callId: string, session: string): void {
    this.#keep(this.#checked, callId, session);
  }

  /** A call guardctl asked a person about, in `session`. */
  asked(callId: string, session: string): void {
    this.#keep(this.#asked, callId, session);
  }

  /** The session of a call, if it is still known. */
  sessionOf(callId: string): string | undefined {
    return this.#checked.get(callId) ?? this.#asked.get(callId);
  }

  #keep(map: Map<string, string>, callId: string, session: string): void {
    map.delete(callId);
    map.set(callId, session);
    if (map.size > this.kept) map.delete(map.keys().next().value!);
  }
}
