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

/** Signs approval requests and checks the signatures on approve() / reject() (HMAC-SHA256 over session, call id and arguments). */
export class ApprovalSigner {
  readonly #secret: string;

  constructor(secret: string) {
    this.#secret = secret;
  }

  /** The signature of an approval request for this call and arguments. */
  sign(sessionId: string, toolCallId: string, input: unknown): string {
    return createHmac('sha256', this.#secret).update(`${sessionId}\n${toolCallId}\n${stableJson(input)}`).digest('base64url');
  }

  /** True when `signature` is the one {@link sign} gives (compared in constant time). */
  verify(sessionId: string, toolCallId: string, input: unknown, signature: string | undefined): boolean {
    if (signature === undefined) return false;
    const x = Buffer.from(signature);
    const y = Buffer.from(this.sign(sessionId, toolCallId, input));
    return x.length === y.length && timingSafeEqual(x, y);
  }
}
