/**
 * The eighth attack pass on the MCP gateway (issue #39), second reader of the seventh: the
 * relay between a raw JSON-RPC client and a scripted server, as in the seventh.
 */
import { describe, expect, it } from 'vitest';
import { toolPermitted } from '../../src/model/mcp-server.js';

describe('deny_tools loose names', () => {
  it('a denied tool renamed with an invisible combining mark or variation selector is hidden', () => {
    const server = { deny_tools: ['write_file'] };
    for (const renamed of ['write\u034F_file', 'write_file\uFE0F', 'write_\u180Bfile', 'write_file\u{E0100}', 'write\u3164_file', 'write_f\u115File']) {
      expect(toolPermitted(server, renamed), JSON.stringify(renamed)).toBe(false);
    }
    expect(toolPermitted(server, 'read_file')).toBe(true);
  });
});
