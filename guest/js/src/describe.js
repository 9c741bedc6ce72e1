// Who this policy is, for the host's logs, its API and the decision ledger.

/** The contract this policy implements; the host refuses other majors. */
export const CONTRACT = 'nomos:continuation@0.2.0';

/** The policy's name, version (keep it equal to package.json's) and contract. */
export function describe() {
  return { name: 'nomos-default-js', version: '0.1.0', contract: CONTRACT };
}
