import { randomBytes } from 'node:crypto';

/** A new approval id: random, so that holding one id says nothing about the others. */
export function newApprovalId(): string {
  return `apr_${randomBytes(12).toString('hex')}`;
}
