import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from './config.js';
import { problemOf, sendProblem } from './problem.js';

/** What a route needs: nothing, a regular (or admin) key, or an admin key. */
export type Access = 'public' | 'read' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Declared by every route; see SPEC section 5 and docs/server.md. */
    access?: Access;
  }
}

type KeyClass = 'admin' | 'regular' | null;

/** Routes that forget to declare a level get the strictest level their method suggests. */
export function defaultAccess(method: string): Access {
  return method === 'GET' || method === 'HEAD' ? 'read' : 'admin';
}

/**
 * Builds the onRequest hook enforcing SPEC section 5. Keys are compared as SHA-256
 * digests with timingSafeEqual against every configured key (no early exit), so
 * neither the key's length nor its first differing byte shows in response times.
 */
export function createAuthHook(config: ServerConfig) {
  const admin = config.adminApiKeys.map(digest);
  const regular = config.apiKeys.map(digest);

  function classify(key: string): KeyClass {
    const given = digest(key);
    let isAdmin = false;
    let isRegular = false;
    for (const d of admin) isAdmin = timingSafeEqual(d, given) || isAdmin;
    for (const d of regular) isRegular = timingSafeEqual(d, given) || isRegular;
    return isAdmin ? 'admin' : isRegular ? 'regular' : null;
  }

  // Answering from an async hook: send, then return the reply so Fastify stops here.
  return async function authHook(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!config.apiKeyEnabled) return undefined;
    const access = request.routeOptions.config?.access ?? defaultAccess(request.method);
    if (access === 'public') return undefined;
    const header = request.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    const keyClass = key ? classify(key) : null;
    if (keyClass === null) {
      reply.header('WWW-Authenticate', 'ApiKey');
      return sendProblem(
        reply,
        problemOf(401, 'unauthorized', key ? 'the X-API-Key header holds an unknown key' : 'send an API key in the X-API-Key header'),
      );
    }
    if (access === 'admin' && keyClass !== 'admin') {
      return sendProblem(reply, problemOf(403, 'forbidden', 'this operation needs an admin key'));
    }
    return undefined;
  };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}
