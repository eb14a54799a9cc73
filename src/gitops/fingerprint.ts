/** A fingerprint of the server state a plan was made against: sha256 of its canonical JSON. */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical.js';
import type { ActualState } from './desired-state.js';

export function fingerprintOf(state: ActualState): string {
  // Sources and timestamps are left out: they do not change what a plan would do.
  const essence = {
    controls: state.controls.map((c) => ({
      control_id: c.control_id,
      name: c.name,
      enabled: c.enabled,
      data: c.data,
      managed_by: c.managed_by,
    })),
    agents: state.agents,
    // Only when read, so fingerprints of plans made without policies stay as they were.
    ...(state.policies ? { policies: state.policies.map(({ source: _source, ...p }) => p) } : {}),
    ...(state.mcp_servers ? { mcp_servers: state.mcp_servers.map(({ source: _source, ...s }) => s) } : {}),
  };
  return `sha256:${createHash('sha256').update(canonicalJson(essence)).digest('hex')}`;
}
