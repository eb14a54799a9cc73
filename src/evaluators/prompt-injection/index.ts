/**
 * The `prompt_injection` evaluator: signals of instructions hidden in content an agent
 * reads (a web page, a file, a tool's output or description), without a model and without
 * the network. Each signal found adds its weight to a score (noisy-or: 1 - Π(1 - w));
 * the check matches when the score reaches `min_score`. Its message and metadata name the
 * signals and the score, never the text. What it cannot catch is in docs/evaluators.md.
 */
import RE2 from 're2';
import { z } from 'zod';
import type { CompiledCheck, EvaluatorDefinition, EvaluatorOutcome, ValueMemo } from '../types.js';
import { textOf } from '../text.js';
import { decodedParts, exfiltrationLinkIn, invisibleIn } from './hidden.js';
import { formsOf, type Forms } from './normalize.js';
import { FAKE_MARKERS, oneOf, OVERRIDE, ROLE_SWITCH, TOOL_POISONING_PLAIN, TOOL_POISONING_SQUEEZED } from './phrases.js';

const FAKE_MARKER_RE = oneOf(FAKE_MARKERS);
const POISONING_PLAIN_RE = oneOf(TOOL_POISONING_PLAIN);

export const INJECTION_SIGNALS = [
  'instruction_override',
  'role_switch',
  'fake_marker',
  'invisible_text',
  'encoded_instructions',
  'exfiltration_link',
  'tool_poisoning',
] as const;
export type InjectionSignal = (typeof INJECTION_SIGNALS)[number];

/** How much one signal says on its own (0..1). */
export const SIGNAL_WEIGHTS: Readonly<Record<InjectionSignal, number>> = {
  instruction_override: 0.9,
  role_switch: 0.6,
  fake_marker: 0.6,
  invisible_text: 0.6,
  encoded_instructions: 0.9,
  exfiltration_link: 0.7,
  tool_poisoning: 0.8,
};

export const PromptInjectionConfigSchema = z.strictObject({
  signals: z
    .array(z.enum(INJECTION_SIGNALS))
    .min(1, 'signals must hold at least one signal')
    .optional()
    .describe(`Signals to look for (default: all): ${INJECTION_SIGNALS.join(', ')}`),
  min_score: z
    .number()
    .gt(0)
    .max(1)
    .optional()
    .describe('Match when the combined score of the signals found reaches this (default 0.5: any one signal but a weak one)'),
});
export type PromptInjectionConfig = z.infer<typeof PromptInjectionConfigSchema>;

export const DEFAULT_MIN_SCORE = 0.5;
const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

export const promptInjectionEvaluator: EvaluatorDefinition = {
  name: 'prompt_injection',
  description:
    'Signals of instructions hidden in content an agent reads: override and role-switch phrasing, fake system/tool markers, ' +
    'invisible text, instructions in base64/hex/URL encodings, exfiltration links, MCP tool poisoning; no model, no network.',
  configSchema: z.toJSONSchema(PromptInjectionConfigSchema, { io: 'input' }),
  zodSchema: PromptInjectionConfigSchema,
  compile(config) {
    const { signals, min_score } = PromptInjectionConfigSchema.parse(config);
    return checkOf(new Set(signals ?? INJECTION_SIGNALS), min_score ?? DEFAULT_MIN_SCORE);
  },
};

/** The signals of `text` among `wanted`, in INJECTION_SIGNALS order. */
export function signalsIn(text: string, wanted: ReadonlySet<InjectionSignal>): InjectionSignal[] {
  const found = new Set<InjectionSignal>();
  // Encoded once for both readers of the bytes (and the squeezed form built from them): -10% CPU per 2 KB check.
  const bytes = Buffer.from(text, 'utf8');
  const forms = formsOf(text, bytes);
  for (const s of saidIn(forms, wanted)) found.add(s);
  if (wanted.has('invisible_text') && !forms.ascii) {
    const inv = invisibleIn(text);
    if (inv.tags > 0 || inv.bidi > 0 || inv.zeroWidth >= 3) found.add('invisible_text');
  }
  if (wanted.has('exfiltration_link') && exfiltrationLinkIn(forms.plain)) found.add('exfiltration_link');
  if (wanted.has('encoded_instructions')) {
    // Decoded once, and the decoded text once more (base64 inside URL-encoding); no deeper.
    const said = (t: string) => saidIn(formsOf(t), ENCODED_SIGNALS).length > 0;
    outer: for (const part of decodedParts(text, bytes)) {
      if (said(part)) {
        found.add('encoded_instructions');
        break;
      }
      for (const inner of decodedParts(part)) {
        if (said(inner)) {
          found.add('encoded_instructions');
          break outer;
        }
      }
    }
  }
  return INJECTION_SIGNALS.filter((s) => found.has(s));
}

/**
 * The patterns of the squeezed form, each with the signal it says, searched together: one
 * RE2 set is one pass of a DFA over the bytes, where a backtracking search tries every
 * alternative at every position (a tenth of the time on 2 KB).
 */
const SQUEEZED_PHRASES: ReadonlyArray<readonly [InjectionSignal, RegExp]> = [
  ...OVERRIDE.map((re) => ['instruction_override', re] as const),
  ...ROLE_SWITCH.map((re) => ['role_switch', re] as const),
  ...TOOL_POISONING_SQUEEZED.map((re) => ['tool_poisoning', re] as const),
];
const SQUEEZED_SET = new RE2.Set(SQUEEZED_PHRASES.map(([, re]) => re.source));

/** What an encoded part must say to count: the phrasing signals. */
const ENCODED_SIGNALS: ReadonlySet<InjectionSignal> = new Set(['instruction_override', 'role_switch', 'fake_marker', 'tool_poisoning']);

function saidIn(forms: Forms, wanted: ReadonlySet<InjectionSignal>): InjectionSignal[] {
  const said = new Set<InjectionSignal>();
  for (const k of SQUEEZED_SET.match(forms.squeezed)) said.add(SQUEEZED_PHRASES[k]![0]);
  if (wanted.has('fake_marker') && FAKE_MARKER_RE.test(forms.plain)) said.add('fake_marker');
  if (wanted.has('tool_poisoning') && !said.has('tool_poisoning') && POISONING_PLAIN_RE.test(forms.plain)) said.add('tool_poisoning');
  return INJECTION_SIGNALS.filter((s) => said.has(s) && wanted.has(s));
}

/** The noisy-or of the signals' weights: independent pieces of evidence, each raising the score. */
export function scoreOf(signals: readonly InjectionSignal[]): number {
  let miss = 1;
  for (const s of signals) miss *= 1 - SIGNAL_WEIGHTS[s];
  return Math.round((1 - miss) * 1000) / 1000;
}

function checkOf(wanted: ReadonlySet<InjectionSignal>, minScore: number): CompiledCheck {
  return (value: unknown, memo?: ValueMemo) => {
    const text = memo ? memo.text(value) : textOf(value);
    if (text === undefined) return NO_MATCH;
    const signals = signalsIn(text, wanted);
    if (signals.length === 0) return NO_MATCH;
    const score = scoreOf(signals);
    if (score < minScore) return { matched: false, confidence: 1 - score, message: null, metadata: { signals, score } };
    return { matched: true, confidence: score, message: `prompt injection signals: ${signals.join(', ')} (score ${score})`, metadata: { signals, score } };
  };
}
