/**
 * The kind of a JSON-RPC message, read from the keys it has. The gateway's transports
 * validate every message they read against the MCP SDK's JSONRPCMessageSchema, whose four
 * shapes are strict objects: a request is the only one with both `method` and `id`, a
 * notification the only one with `method` alone, a result the only one with `result`.
 * The SDK's `isJSONRPC*` guards validate the whole message with zod again on each call
 * (the relay asked up to five of them per message). On a message no transport validated,
 * reading the keys is the stricter of the two: anything with a `method` and an `id` is a
 * request, and so checked, where a failed guard would have passed it on as an answer.
 * With schemaFor: 0.78 of the gateway's own CPU time per tools/call (interleaved A/B, 20 sdk controls).
 */
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPCErrorResponseSchema, JSONRPCNotificationSchema, JSONRPCRequestSchema, JSONRPCResultResponseSchema } from '@modelcontextprotocol/sdk/types.js';

export type MessageKind = 'request' | 'notification' | 'result' | 'error' | 'invalid';

export function kindOf(message: JSONRPCMessage): MessageKind {
  if ('method' in message) {
    if (!('id' in message)) return 'notification';
    return isRequestId(message.id) ? 'request' : 'invalid';
  }
  if ('result' in message) return 'result';
  return 'error' in message ? 'error' : 'invalid';
}

function isRequestId(id: unknown): id is RequestId {
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id));
}

/**
 * The one schema of JSONRPCMessageSchema's union a parsed line can match (its shapes are
 * strict, so the keys decide), so a line is validated once instead of against each shape
 * in turn: an answer failed the request and notification shapes first, and a failed zod
 * parse builds its issues.
 */
export function schemaFor(json: unknown): typeof JSONRPCRequestSchema | typeof JSONRPCNotificationSchema | typeof JSONRPCResultResponseSchema | typeof JSONRPCErrorResponseSchema {
  if (typeof json === 'object' && json !== null) {
    if ('method' in json) return 'id' in json ? JSONRPCRequestSchema : JSONRPCNotificationSchema;
    if ('result' in json) return JSONRPCResultResponseSchema;
  }
  return JSONRPCErrorResponseSchema;
}
