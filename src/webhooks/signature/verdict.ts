/**
 * What a signature check says about one delivery, as plain data: accepted (with the delivery's id and
 * timestamp, for the replay window), or refused with a stable reason code that names the outcome counted in
 * `calls_connector_webhook_deliveries_total` and the status the receiver answers (401 for each of them).
 */
import { createHash } from 'node:crypto';

/** Why a delivery was refused. Stable: metrics, logs and docs name these words. */
export type SignatureRefusal =
  /** No signature header at all. */
  | 'unsigned'
  /** A signature header (or its companions) that is malformed, or no signature matches any active secret. */
  | 'bad_signature'
  /** Authentic, but its timestamp is further from now than the tolerance (an old delivery replayed). */
  | 'stale_timestamp';

/** The headers of a request as node:http gives them: lower-case names. */
export type DeliveryHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** One delivery as the signature rules see it: raw bytes, never a re-serialized body. */
export interface SignedDelivery {
  headers: DeliveryHeaders;
  body: Uint8Array;
  /** Now, epoch ms (the injected clock's). */
  nowMs: number;
  /** The request target as received (path and query), for schemes that sign the URL; absent: `/`. */
  target?: string | undefined;
}

export type SignatureVerdict =
  | {
      ok: true;
      /**
       * What identifies this delivery for the replay window, always from signed material: the delivery id
       * when the signature covers it (`id:`), else a digest of what was signed (`sig:`), so that neither a
       * fresh unsigned id nor another of the sender's signatures makes a replay new. null when unsigned was
       * allowed.
       */
      replayKey: string | null;
      /** The signed timestamp, epoch ms; null when the scheme signs none. */
      timestampMs: number | null;
      /** What the payload mapping reads when it is not the raw body (a JWT body's claims, as JSON). */
      payload?: Uint8Array;
    }
  | { ok: false; reason: SignatureRefusal; detail: string };

export function refuse(reason: SignatureRefusal, detail: string): SignatureVerdict {
  return { ok: false, reason, detail };
}

/** The single value of a header; a repeated header counts as malformed (undefined). */
export function headerValue(headers: DeliveryHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return typeof value === 'string' ? value : undefined;
}

/** Whether |now - timestamp| is within the tolerance. */
export function withinTolerance(timestampMs: number, nowMs: number, toleranceMs: number): boolean {
  return Math.abs(nowMs - timestampMs) <= toleranceMs;
}

/** The replay key of a delivery identified by what was signed: a digest, so the window never holds a signature. */
export function signedContentKey(...parts: ReadonlyArray<Uint8Array | string>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return `sig:${hash.digest('base64')}`;
}
