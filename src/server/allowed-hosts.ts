/**
 * The host names and addresses the server answers to (GUARD_ALLOWED_HOSTS): parsing the
 * setting, its default, and reading a request's Host header in the same normal form, so
 * that the cross-site guard (cross-site.ts) compares two strings.
 *
 * Normal form: lowercase; an IPv6 address in brackets, compressed (`[::1]`); no port (any
 * port is accepted: the port says nothing about which site a browser thinks it talks to).
 */
import { isIPv6 } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';

/** The entry that allows any Host (for servers behind a proxy that checks it). */
export const ANY_HOST = '*';

/** Always allowed by default: the loopback names a local client uses. */
const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'] as const;

/** Listen addresses meaning "every interface": they name no host a client would send. */
const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '::', '[::]', '']);

/**
 * A DNS name or IPv4 address as written in a Host header: letters, digits, `-`, `_` and
 * inner dots. No trailing dot, userinfo, percent-encoding or spaces: a browser never sends
 * those, and each is a way to make two different strings name "the same" host.
 */
const NAME = /^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?$/;

/** `[v6]` in compressed form, or null when the text between the brackets is not IPv6. */
function bracketedIPv6(inner: string): string | null {
  if (!isIPv6(inner)) return null;
  return new URL(`http://[${inner}]`).hostname;
}

/**
 * The host of a Host header in normal form, or null when the header is not a valid
 * `host[:port]` (a port of 1 to 5 digits, at most 65535).
 */
export function hostOfHeader(header: string): string | null {
  const text = header.toLowerCase();
  let host: string;
  let rest: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return null;
    const v6 = bracketedIPv6(text.slice(1, close));
    if (v6 === null) return null;
    host = v6;
    rest = text.slice(close + 1);
  } else {
    const colon = text.indexOf(':');
    host = colon === -1 ? text : text.slice(0, colon);
    rest = colon === -1 ? '' : text.slice(colon);
    if (!NAME.test(host)) return null;
  }
  if (rest !== '' && !(/^:\d{1,5}$/.test(rest) && Number(rest.slice(1)) <= 65535)) return null;
  return host;
}

/** An entry of GUARD_ALLOWED_HOSTS in normal form, or why it cannot be one. */
export function allowedHostEntry(entry: string): { host: string } | { problem: string } {
  const text = entry.trim().toLowerCase();
  if (text === ANY_HOST) return { host: ANY_HOST };
  if (text.startsWith('[') && text.endsWith(']')) {
    const v6 = bracketedIPv6(text.slice(1, -1));
    return v6 === null ? { problem: `"${entry}" is not an IPv6 address` } : { host: v6 };
  }
  if (isIPv6(text)) return { host: new URL(`http://[${text}]`).hostname };
  if (text.includes('://')) return { problem: `"${entry}" is a URL; list the host name alone (any scheme and port is accepted)` };
  if (/^[^:]+:\d*$/.test(text)) return { problem: `"${entry}" has a port; list the host name alone (any port is accepted)` };
  if (!NAME.test(text)) return { problem: `"${entry}" is not a host name or address (wildcards other than a lone * are not supported)` };
  return { host: text };
}

/**
 * The default: the listen address, then localhost, 127.0.0.1 and [::1]. A server listening
 * on every interface (0.0.0.0, ::) has no one address, so it answers to the addresses of
 * the machine's network interfaces and its host name besides the loopback names; a DNS
 * name clients use (a load balancer's, a container's service name) must be listed.
 */
export function defaultAllowedHosts(listenHost: string): string[] {
  const hosts: string[] = [];
  const add = (entry: string) => {
    const parsed = allowedHostEntry(entry);
    if ('host' in parsed && parsed.host !== ANY_HOST && !hosts.includes(parsed.host)) hosts.push(parsed.host);
  };
  if (WILDCARD_ADDRESSES.has(listenHost.trim().toLowerCase())) {
    for (const name of LOOPBACK) add(name);
    add(hostname());
    for (const address of Object.values(networkInterfaces()).flat()) {
      // A link-local address may carry its zone (fe80::1%eth0); a Host header cannot.
      if (address) add(address.address.split('%')[0] ?? '');
    }
    return hosts;
  }
  add(listenHost);
  for (const name of LOOPBACK) add(name);
  return hosts;
}
