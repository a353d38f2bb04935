/**
 * Challenge handshakes: requests a sender makes when an endpoint is registered, to see that it answers, and
 * that nudge nothing (`webhooks.signature.challenge`):
 * - `slack`: a signed `{"type": "url_verification", "challenge": …}` answered with the challenge;
 * - `zoom`: a signed `{"event": "endpoint.url_validation", "payload": {"plainToken": …}}` answered with the
 *   token and its hex HMAC-SHA256 under the secret (`encryptedToken`);
 * - `ringcentral`: a request carrying a `Validation-Token` header, answered 200 with the same header (sent
 *   before any token exists, so answered before the signature check; it reveals nothing and nudges nothing).
 * Pure: each function says what to answer, or null when the request is not that handshake.
 */
import { createHmac } from 'node:crypto';
import { readPath } from '../../json/dotted-path.js';
import { parseJsonObject } from '../../json/json-object.js';
import type { DeliveryHeaders } from './verdict.js';
import { headerValue } from './verdict.js';

export type Challenge = 'none' | 'slack' | 'zoom' | 'ringcentral';

export interface ChallengeAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Printable, short: what may be echoed into a header or a JSON answer. */
const ECHOABLE = /^[\x21-\x7e]{1,512}$/;

/** The answer to a handshake that comes unsigned (RingCentral's), before anything is read. */
export function challengeBeforeSignature(kind: Challenge, headers: DeliveryHeaders): ChallengeAnswer | null {
  if (kind !== 'ringcentral') return null;
  const token = headerValue(headers, 'validation-token');
  if (token === undefined || !ECHOABLE.test(token)) return null;
  return { status: 200, headers: { 'validation-token': token }, body: '' };
}

/** The answer to a handshake the sender signs (Slack's, Zoom's), once the signature was verified. */
export function challengeAfterSignature(
  kind: Challenge,
  payload: Uint8Array,
  key: Uint8Array | undefined,
): ChallengeAnswer | null {
  if (kind !== 'slack' && kind !== 'zoom') return null;
  const fields = parseJsonObject(Buffer.from(payload).toString('utf8'));
  if (fields === undefined) return null;
  if (kind === 'slack') {
    const challenge = fields['challenge'];
    if (fields['type'] !== 'url_verification' || typeof challenge !== 'string' || !ECHOABLE.test(challenge))
      return null;
    return json({ challenge });
  }
  const plainToken = readPath(fields, 'payload.plainToken');
  if (fields['event'] !== 'endpoint.url_validation' || typeof plainToken !== 'string' || key === undefined)
    return null;
  if (!ECHOABLE.test(plainToken)) return null;
  return json({ plainToken, encryptedToken: createHmac('sha256', key).update(plainToken).digest('hex') });
}

function json(value: object): ChallengeAnswer {
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}
