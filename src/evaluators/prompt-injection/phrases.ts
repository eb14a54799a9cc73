/**
 * The phrasing of injected instructions, as patterns over the squeezed form (letters only,
 * normalize.ts) and markers over the plain form. PURE. Every pattern is a fixed sequence
 * of bounded alternations, without nested repetition, so a search is linear in the text.
 */

/** Telling the model to drop what it was told. */
export const OVERRIDE: readonly RegExp[] = [
  // ignore [all of the previous] instructions: a verb, qualifiers, a word for what it was told.
  /(?:ignore|disregard|forget|overlook|bypass|override|neglect)(?:all|any|every|the|your|my|these|those|of|and|following|other|previous|prior|above|earlier|preceding|former|original|initial|system|existing|old|developer){1,5}(?:instruction|prompt|rule|direction|directive|guideline|command|context|message|constraint|order|guidance|programming|text|evidence|task)/,
  // ignore the directions above
  /(?:ignore|disregard|forget)(?:the|all|any|your)?(?:instruction|direction|rule|prompt|text|guideline)s?(?:above|before|earlier|sofar|given|youweregiven)/,
  /(?:forget|ignore|disregard)(?:everything|all)(?:above|before|prior|previously|youwere|youknow|youhavebeen|sofar|else)/,
  /donot(?:follow|obey|listen)(?:to)?(?:the|your|any|all)?(?:previous|prior|system|original|above|earlier|developer)/,
  /(?:your|the)new(?:instructions|instruction|task|rules|directive|orders)(?:are|is|follow|now)/,
  /(?:override|bypass|disable|turnoff|deactivate)(?:the|your|all|any)?(?:safety|security|content|ethical|moderation)?(?:filters?|guardrails?|restrictions|policies|policy|safeguards|guidelines)/,
  // Asking for what the model was told: a step of most prompt-extraction attacks.
  /(?:repeat|reveal|print|show|list|output|tellme|whatare|writedown|respondwith)(?:me)?(?:all|every)?(?:of)?(?:your|the)?(?:initial|original|system|hidden|secret|previous|first|initials)(?:instructions|instruction|prompt|prompts|rules|guidelines|directives)/,
  /(?:repeat|reveal|print|output|list|respondwith)(?:all|every)?(?:of)?your(?:instructions|instruction|prompt|rules|guidelines)(?:verbatim|word|exactly|youhave|above)?/,
];

/** Telling the model to become something else. */
export const ROLE_SWITCH: readonly RegExp[] = [
  /youarenow(?:a|an|the|in|my|no|free|dan|unrestricted|jailbroken|evil)/,
  /fromnowon(?:you|act|respond|answer|pretend|behave|reply|your)/,
  /(?:act|behave|respond|roleplay)as(?:if)?(?:you|an?)?(?:were|are)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan|anai(?:without|with(?:no|out)))/,
  /(?:developer|god|admin|sudo|unrestricted|jailbreak|dan|debug)mode(?:enabled|activated|on|now)/,
  /(?:enable|enter|activate|switchto)(?:developer|god|admin|sudo|unrestricted|jailbreak|dan|debug)mode/,
  /doanythingnow/,
  /nolonger(?:bound|restricted|limited|constrained)(?:by)?/,
  /pretend(?:to|that)?(?:be|you(?:are|have))(?:an?)?(?:unrestricted|unfiltered|uncensored|evil|ai(?:without|with(?:no|out)))/,
];

/** Text that imitates the conversation's own structure: role headers, chat-template tokens. */
export const FAKE_MARKERS: readonly RegExp[] = [
  /<\|\s*(?:im_start|im_end|system|endoftext|assistant|user|start_header_id|end_header_id|eot_id)\s*\|>/,
  /\[\/?(?:system|inst|sys)\]/,
  /<<\/?sys>>/,
  /<\/?(?:system|system_prompt|tool_result|tool_output|function_results|function_result|instructions|admin|developer)>/,
  /(?:^|\n)[ \t]*(?:#{1,6}|\*\*|\[)[ \t]*(?:system|admin|developer)[ \t]*(?:prompt|message|instructions?|override|note)?[ \t]*(?:\*\*|\])?[ \t]*:/,
  /(?:^|\n)[ \t]*(?:system|developer)[ \t]*(?:prompt|message)?[ \t]*:[ \t]*\S/,
  /(?:begin|start|end)[ \t]+(?:of[ \t]+)?(?:the[ \t]+)?(?:system|admin|developer)[ \t]+(?:prompt|message|instructions)/,
  /end[ \t]+of[ \t]+(?:tool|function|document)[ \t]+(?:output|result|response|content)/,
];

/** Hidden instructions in an MCP tool's description (tool poisoning), in the squeezed form. */
export const TOOL_POISONING_SQUEEZED: readonly RegExp[] = [
  /important(?:note)?(?:for|to)?(?:the)?(?:ai|assistant|model|llm|agent)/,
  /(?:donot|dont|never)(?:tell|inform|mention|reveal|disclose|show|notify)(?:this|that|it|anything)?(?:to)?(?:the)?user/,
  /beforeusing(?:this|the)tool(?:you)?(?:must|should|need)/,
  /thistool(?:has|was)been(?:updated|changed|replaced|deprecated)/,
  /(?:pass|send|include|append|put)(?:the|its|their|all)?(?:content|contents|text|data)(?:of)?(?:it|them|the)?(?:as|in|into)(?:the)?(?:sidenote|parameter|argument|notes|field)/,
  /(?:always|must|should)(?:call|use|invoke)thistool(?:first|instead|before)/,
  /ignore(?:the|all|any)?(?:other|previous)tools?/,
];

/** Files a poisoned tool asks the model to read, in the plain form. */
export const TOOL_POISONING_PLAIN: readonly RegExp[] = [
  /<important>/,
  /~\/\.(?:ssh|aws|cursor|config|kube|docker|gnupg|netrc)\b/,
  /\bid_(?:rsa|ed25519|ecdsa)\b/,
  /\bmcp\.json\b/,
];

/** The patterns of a list as one alternation: one search of the text instead of one per pattern. */
export function oneOf(patterns: readonly RegExp[]): RegExp {
  return new RegExp(patterns.map((p) => `(?:${p.source})`).join('|'));
}
