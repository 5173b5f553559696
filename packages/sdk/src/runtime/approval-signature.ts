import { createHmac, timingSafeEqual } from 'node:crypto';

/** JSON with sorted keys, so that equal values sign equally whatever their key order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What an approval signature binds: the session, the suspended run that asked, the call, the decision
 * and, for an approval, the final input the tool will run with (the edited input, or the request's
 * arguments when it is not edited). A rejection binds no input.
 */
export type ApprovalToSign =
  | { readonly sessionId: string; readonly runId: string; readonly toolCallId: string; readonly decision: 'approve'; readonly input: unknown }
  | { readonly sessionId: string; readonly runId: string; readonly toolCallId: string; readonly decision: 'reject' };

/**
 * Signs decisions and checks the signatures on approve() / reject(): HMAC-SHA256 with the executor's
 * secret over session, run, call, decision and final input. The signature never appears on the stream:
 * the approver's server gets it from `executor.signApproval(...)`, so reading the stream authorizes nothing.
 */
export class ApprovalSigner {
  readonly #secret: string;

  constructor(secret: string) {
    this.#secret = secret;
  }

  /** The signature of this decision. */
  sign(approval: ApprovalToSign): string {
    const input = approval.decision === 'approve' ? stableJson(approval.input) : '';
    const message = JSON.stringify(['helix-approval/2', approval.sessionId, approval.runId, approval.toolCallId, approval.decision, input]);
    return createHmac('sha256', this.#secret).update(message).digest('base64url');
  }

  /** True when `signature` is the one {@link sign} gives (compared in constant time). */
  verify(approval: ApprovalToSign, signature: string | undefined): boolean {
    if (typeof signature !== 'string') return false;
    const x = Buffer.from(signature);
    const y = Buffer.from(this.sign(approval));
    return x.length === y.length && timingSafeEqual(x, y);
  }
}
