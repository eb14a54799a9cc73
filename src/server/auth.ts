import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthThrottle } from './auth-throttle.js';
import type { ServerConfig } from './config.js';
import { problemOf, sendProblem } from './problem.js';

/**
 * What a route needs: nothing, a regular (or admin) key, or an admin key. Approvals have
 * two levels of their own: `approvals` (reading them: regular, admin or approver keys) and
 * `approve` (deciding them: admin or approver keys). An approver key opens nothing else.
 */
export type Access = 'public' | 'read' | 'admin' | 'approvals' | 'approve';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Declared by every route; see SPEC section 5 and docs/server.md. */
    access?: Access;
  }
}

type KeyClass = 'admin' | 'regular' | 'approver' | null;

/** Routes that forget to declare a level get the strictest level their method suggests. */
export function defaultAccess(method: string): Access {
  return method === 'GET' || method === 'HEAD' ? 'read' : 'admin';
}

/**
 * Builds the onRequest hook enforcing SPEC section 5. Keys are compared as SHA-256
 * digests with timingSafeEqual against every configured key (no early exit), so
 * neither the key's length nor its first differing byte shows in response times.
 * Addresses that keep sending wrong keys are slowed down (auth-throttle.ts).
 */
export function createAuthHook(config: ServerConfig, throttle = new AuthThrottle({ maxFailures: config.authMaxFailures })) {
  const classify = keyClassifier(config);

  // Answering from an async hook: send, then return the reply so Fastify stops here.
  return async function authHook(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!config.apiKeyEnabled) return undefined;
    const access = request.routeOptions.config?.access ?? defaultAccess(request.method);
    if (access === 'public') return undefined;
    const wait = throttle.blockedFor(request.ip);
    if (wait > 0) {
      refuseBody(request, reply);
      reply.header('Retry-After', String(Math.ceil(wait / 1000)));
      return sendProblem(reply, problemOf(429, 'too_many_requests', 'too many requests with a missing or unknown key from this address; try again after Retry-After seconds'));
    }
    const key = keyOf(request);
    const keyClass = key ? classify(key) : null;
    if (keyClass === null) {
      throttle.recordFailure(request.ip);
      refuseBody(request, reply);
      reply.header('WWW-Authenticate', 'ApiKey');
      return sendProblem(
        reply,
        problemOf(401, 'unauthorized', key ? 'the X-API-Key header holds an unknown key' : 'send an API key in the X-API-Key header'),
      );
    }
    const refusal = refusalOf(access, keyClass);
    if (refusal !== null) return sendProblem(reply, problemOf(403, 'forbidden', refusal));
    return undefined;
  };
}

/** Why a known key may not use a route of `access`, or null when it may. */
function refusalOf(access: Exclude<Access, 'public'>, keyClass: Exclude<KeyClass, null>): string | null {
  switch (access) {
    case 'read':
      return keyClass === 'approver' ? 'an approver key reads and decides approvals only' : null;
    case 'admin':
      return keyClass === 'admin' ? null : 'this operation needs an admin key';
    case 'approvals':
      return null;
    case 'approve':
      return keyClass === 'regular' ? 'deciding an approval needs an admin or approver key (GUARD_APPROVER_API_KEYS)' : null;
  }
}

/**
 * A refused request's body is never read: the connection closes after the answer instead
 * of Node reading (and discarding) the rest of the body to reuse the connection, which a
 * client sending its body slowly could stretch for as long as it likes.
 */
function refuseBody(request: FastifyRequest, reply: FastifyReply): void {
  const { headers } = request;
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (hasBody) reply.header('Connection', 'close');
}

/** The key's class, compared in constant time against every configured key. */
function keyClassifier(config: ServerConfig): (key: string) => KeyClass {
  const admin = config.adminApiKeys.map(digest);
  const regular = config.apiKeys.map(digest);
  const approver = config.approverApiKeys.map(digest);
  return (key) => {
    const given = digest(key);
    let isAdmin = false;
    let isRegular = false;
    let isApprover = false;
    for (const d of admin) isAdmin = timingSafeEqual(d, given) || isAdmin;
    for (const d of regular) isRegular = timingSafeEqual(d, given) || isRegular;
    for (const d of approver) isApprover = timingSafeEqual(d, given) || isApprover;
    // A key listed in two classes counts as the first of admin, regular, approver.
    return isAdmin ? 'admin' : isRegular ? 'regular' : isApprover ? 'approver' : null;
  };
}

function keyOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key'];
  return Array.isArray(header) ? header[0] : header;
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Hex characters of the key's SHA-256 that name it in history and audit: enough to tell keys apart, useless to guess one. */
const FINGERPRINT_LENGTH = 8;

/**
 * Who a write request is, for history and the audit log: `admin:3f9a1c2b` (the key's
 * class and the first hex characters of its SHA-256, never the key itself), or
 * `anonymous` when authentication is off. Only write routes ask, so evaluation never pays.
 */
export function createActorOf(config: ServerConfig): (request: FastifyRequest) => string {
  if (!config.apiKeyEnabled) return () => 'anonymous';
  const classify = keyClassifier(config);
  return (request) => {
    const key = keyOf(request);
    // The auth hook already refused requests without a known key; this is a safeguard.
    const keyClass = key ? classify(key) : null;
    if (!key || keyClass === null) return 'unknown';
    return `${keyClass}:${digest(key).toString('hex').slice(0, FINGERPRINT_LENGTH)}`;
  };
}
