/**
 * What one delivery comes to, once the receiver has routed it (receiver.ts): the steps after the request line,
 * in this order, each ending the delivery with an outcome (the receiver answers its status and counts it):
 * 1. a registration handshake (signature/challenge.ts) is answered before the signature or, signed ones, after
 *    step 3 (200, counted ignored); not a JSON content type: malformed, unless the scheme's body is a JWT;
 * 2. the raw body, at most the receiver's limit (too_large);
 * 3. the signature over those raw bytes (unsigned, bad_signature, stale_timestamp);
 * 4. the same delivery's nudge being offered now (pending-offers.ts): it waits for that offer and shares its
 *    outcome (replayed once taken, unavailable if not); an id already taken: replayed, nothing nudged;
 * 5. the payload mapping: not JSON or no uid, malformed; not `call.*`, ignored;
 * 6. the location(s) (nudge-resolution.ts); none of ours: ignored;
 * 7. the nudge handed to the NudgeSink: accepted as soon as `offer` resolves, before any polling; an offer that
 *    rejects or is not settled within `nudgeTimeoutMs` is unavailable (the sender retries later). Only a taken
 *    delivery's id enters the replay window; the sink gets it too, to share it with other instances' windows
 *    (distributed mode, nudge-sink.ts), which then refuse a replay sent to them as `replayed`.
 *
 * A refused or malformed delivery is logged at debug only (a flood of forgeries must not flood the log), never
 * with its body or headers. Nothing is published from a payload.
 */
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import { TIMED_OUT, withTimeout, type Clock } from '../time/clock.js';
import type { GrantDirectory } from './location-directory.js';
import type { NudgeSink } from './nudge-sink.js';
import { resolveNudge, type ResolvedNudge } from './nudge-resolution.js';
import { mapPayload, type PayloadMapping } from './payload-mapping.js';
import { PendingOffers } from './pending-offers.js';
import type { ReplayWindow } from './replay-window.js';
import { isJsonContentType } from './request-body.js';
import type { ChallengeAnswer } from './signature/challenge.js';
import type { DeliveryHeaders } from './signature/verdict.js';
import {
  expectsJsonBody,
  handshakeAfterSignature,
  handshakeBeforeSignature,
  verifyDelivery,
  type SignatureRule,
} from './signature/verify.js';
import type { UidLocationIndex } from './uid-locations.js';

export type DeliveryOutcome =
  | 'accepted'
  | 'ignored'
  | 'unsigned'
  | 'bad_signature'
  | 'stale_timestamp'
  | 'replayed'
  | 'malformed'
  | 'too_large'
  | 'unavailable';

/** One routed delivery, as the receiver hands it over. */
export interface IncomingDelivery {
  headers: DeliveryHeaders;
  /** The request target as received (path and query), for schemes that sign the URL. */
  target: string | undefined;
  /** The grant its path names; null: the bare path (every configured location). */
  grant: string | null;
  /** The raw body; undefined once it is over the receiver's limit. */
  readBody(): Promise<Buffer | undefined>;
  /** Drains the body unread (an answer that does not need it). */
  discard(): void;
}

/** The outcome, and the handshake to answer in place of the outcome's status (counted `ignored`). */
export interface DeliveryAnswer {
  outcome: DeliveryOutcome;
  handshake?: ChallengeAnswer;
}

export interface DeliveryHandlerOptions {
  rule: SignatureRule;
  replay: ReplayWindow;
  mapping: PayloadMapping;
  directory: GrantDirectory;
  index: Pick<UidLocationIndex, 'locationOf'>;
  sink: NudgeSink;
  /** A nudge not taken within this is unavailable (the sender retries). */
  nudgeTimeoutMs: number;
  metrics: Pick<ConnectorMetrics, 'webhookNudges'>;
  /** Reads the time for signatures and replays; runs the nudge timeout. */
  clock: Clock;
  logger?: Logger | undefined;
}

type OfferOutcome = Extract<DeliveryOutcome, 'accepted' | 'unavailable'>;

export class DeliveryHandler {
  private readonly pending = new PendingOffers<OfferOutcome>();

  constructor(private readonly options: DeliveryHandlerOptions) {}

  async handle(delivery: IncomingDelivery): Promise<DeliveryAnswer> {
    const { logger, rule } = this.options;
    const handshake = handshakeBeforeSignature(rule, delivery.headers);
    if (handshake !== null) {
      delivery.discard();
      return { outcome: 'ignored', handshake };
    }
    const contentType = delivery.headers['content-type'];
    if (
      expectsJsonBody(rule) &&
      !isJsonContentType(typeof contentType === 'string' ? contentType : undefined)
    ) {
      delivery.discard();
      logger?.debug({ outcome: 'malformed' }, 'webhook delivery refused: not application/json');
      return { outcome: 'malformed' };
    }
    const body = await delivery.readBody();
    if (body === undefined) return { outcome: 'too_large' };
    const nowMs = this.options.clock.now();
    const verdict = await verifyDelivery(rule, {
      headers: delivery.headers,
      body,
      nowMs,
      target: delivery.target,
    });
    if (!verdict.ok) {
      logger?.debug({ outcome: verdict.reason, detail: verdict.detail }, 'webhook delivery refused');
      return { outcome: verdict.reason };
    }
    const payload = verdict.payload ?? body;
    const signedHandshake = handshakeAfterSignature(rule, payload);
    if (signedHandshake !== null) return { outcome: 'ignored', handshake: signedHandshake };
    return { outcome: await this.nudge(payload, verdict.replayKey, delivery.grant, nowMs) };
  }

  /** Steps 4 to 7: the verified payload's nudge, unless its delivery was taken already. */
  private async nudge(
    payload: Uint8Array,
    replayKey: string | null,
    grant: string | null,
    nowMs: number,
  ): Promise<DeliveryOutcome> {
    const { logger, replay } = this.options;
    if (replayKey !== null) {
      if (replay.has(replayKey, nowMs)) return 'replayed';
      // The same delivery's nudge is being offered: told "taken" only once it is, never before.
      const pending = this.pending.get(replayKey);
      if (pending !== undefined) return (await pending) === 'accepted' ? 'replayed' : 'unavailable';
    }
    const mapped = mapPayload(this.options.mapping, payload);
    if (mapped.kind === 'malformed') {
      logger?.debug({ outcome: 'malformed', detail: mapped.detail }, 'webhook delivery refused');
      return 'malformed';
    }
    if (mapped.kind === 'ignored') {
      if (replayKey !== null) replay.record(replayKey, nowMs);
      return 'ignored';
    }
    const resolved = resolveNudge(mapped.nudge, grant, this.options.directory, this.options.index);
    if (resolved === null) {
      logger?.debug({ uid: mapped.nudge.uid }, 'webhook delivery names no location of this connector');
      if (replayKey !== null) replay.record(replayKey, nowMs);
      return 'ignored';
    }
    // Nothing awaited since the pending check above: a duplicate arriving from now on finds this offer pending.
    return replayKey === null
      ? this.offer(resolved, null, nowMs)
      : this.pending.run(replayKey, () => this.offer(resolved, replayKey, nowMs));
  }

  /**
   * Hands the nudge to the sink, bounded by `nudgeTimeoutMs`; never rejects. Taken: its id enters the replay
   * window. Not taken (rejected, or still pending at the timeout): the id stays out of it, so the sender's retry
   * is taken; an offer that completes after its timeout has nudged once more than needed, which costs a poll.
   * The sink is handed the id with `verifiedAtMs` (when the signature was checked), for the replay windows of
   * other instances (nudge-sink.ts).
   */
  private async offer(
    resolved: ResolvedNudge,
    replayKey: string | null,
    verifiedAtMs: number,
  ): Promise<OfferOutcome> {
    const { clock, logger, nudgeTimeoutMs } = this.options;
    const shared = replayKey === null ? undefined : { key: replayKey, atMs: verifiedAtMs };
    try {
      const taken = await withTimeout(clock, this.options.sink.offer(resolved, shared), nudgeTimeoutMs);
      if (taken === TIMED_OUT) {
        logger?.warn(
          { uid: resolved.uid, timeoutMs: nudgeTimeoutMs },
          'webhook nudge not taken in time: answered 503 for a retry',
        );
        return 'unavailable';
      }
    } catch (error) {
      logger?.warn({ err: error, uid: resolved.uid }, 'webhook nudge not taken: answered 503 for a retry');
      return 'unavailable';
    }
    if (replayKey !== null) this.options.replay.record(replayKey, clock.now());
    this.options.metrics.webhookNudges.inc({ resolution: resolved.resolution });
    return 'accepted';
  }
}
