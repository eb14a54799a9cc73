/**
 * The defence against DNS rebinding and cross-site requests. With authentication off (the
 * default) the API is open to anyone who reaches the port, and a browser reaches it for
 * any page: a page on `rebind.evil.example`, whose name later resolves to 127.0.0.1, talks
 * to the server as its own origin (so the browser lets it read the answers), and a page on
 * any site can send simple requests to it. What gives both away is in the headers:
 *
 * - `Host` names the page's host, never one the operator configured (GUARD_ALLOWED_HOSTS).
 *   Checked on every request, /health and /metrics included: rebinding reads them too.
 * - `Origin` (sent by browsers on every cross-origin request and every non-GET) names a
 *   host that is not allowed; `Sec-Fetch-Site` says `cross-site`, or `same-site` from an
 *   origin that is not allowed. Checked on everything but /health and /metrics (public,
 *   and a page on another origin cannot read their answers: no CORS headers are sent).
 *
 * Clients that are not browsers send no Origin or Sec-Fetch-Site and are not affected.
 * The content type plays no part: a body-less POST with none is an ordinary write.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from './config.js';
import { ANY_HOST, hostOfHeader } from './allowed-hosts.js';
import { problemOf, sendProblem } from './problem.js';

/** Paths whose answers are public and carry no data of the API: only the Host check applies. */
const PUBLIC_PATHS = new Set(['/health', '/metrics']);

/** Distinct Host headers remembered with their verdict (one client sends one); cleared when full. */
const MEMO_SIZE = 64;

type HostVerdict = { host: string; allowed: boolean } | null;

/** Builds the onRequest hook; it runs before authentication, so a refused request learns nothing about keys. */
export function createCrossSiteGuard(config: Pick<ServerConfig, 'allowedHosts'>) {
  const any = config.allowedHosts.includes(ANY_HOST);
  const allowed = new Set(config.allowedHosts);
  const memo = new Map<string, HostVerdict>();

  function verdictOf(header: string): HostVerdict {
    let verdict = memo.get(header);
    if (verdict === undefined) {
      const host = hostOfHeader(header);
      verdict = host === null ? null : { host, allowed: any || allowed.has(host) };
      if (memo.size >= MEMO_SIZE) memo.clear();
      memo.set(header, verdict);
    }
    return verdict;
  }

  /** Whether a browser page of `origin` may use the API: its host is allowed (or, with `*`, is the Host itself). */
  function originAllowed(origin: string, requestHost: string): boolean {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    // A browser sends exactly scheme://host[:port]; anything else (userinfo, a path, `null`) is refused.
    if (url.origin !== origin.toLowerCase() || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
    const host = url.hostname;
    return allowed.has(host) || (any && host === requestHost);
  }

  return function crossSiteGuard(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const { headers } = request;
    const header = headers.host;
    if (header === undefined) {
      // HTTP/1.0 may leave Host out; only a server told to accept any Host takes that.
      if (any && request.raw.httpVersion === '1.0') return done();
      void sendProblem(reply, problemOf(400, 'bad_request', 'the request has no Host header; send the host name the server is reached by'));
      return;
    }
    if (hostHeaderCount(request.raw.rawHeaders) > 1) {
      void sendProblem(reply, problemOf(400, 'bad_request', 'the request has more than one Host header'));
      return;
    }
    const verdict = verdictOf(header);
    if (verdict === null || !verdict.allowed) {
      void sendProblem(
        reply,
        problemOf(403, 'host_not_allowed', 'the Host header names a host this server is not configured for; the operator lists the names clients use in GUARD_ALLOWED_HOSTS'),
      );
      return;
    }
    const origin = headers.origin;
    const site = headers['sec-fetch-site'];
    if ((origin === undefined && site === undefined) || PUBLIC_PATHS.has(pathOf(request.url))) return done();
    const originOk = origin !== undefined && originAllowed(origin, verdict.host);
    if (origin !== undefined && !originOk) {
      void sendProblem(reply, problemOf(403, 'cross_site', 'the Origin header names a site this server is not configured for (GUARD_ALLOWED_HOSTS); cross-site requests are refused'));
      return;
    }
    if (site !== undefined && !siteAllowed(site.toLowerCase(), originOk)) {
      void sendProblem(reply, problemOf(403, 'cross_site', `the Sec-Fetch-Site header says the request is ${site === 'same-site' ? 'from another origin of the same site' : 'cross-site'}; cross-site requests are refused`));
      return;
    }
    done();
  };
}

/** `none` (typed by the user) and `same-origin` pass; `same-site` only from an allowed Origin; anything else is refused. */
function siteAllowed(site: string, originOk: boolean): boolean {
  return site === 'same-origin' || site === 'none' || (site === 'same-site' && originOk);
}

function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Node keeps the first of several Host headers; a proxy may use another, so two are refused (RFC 9112 section 3.2). */
function hostHeaderCount(raw: string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}
