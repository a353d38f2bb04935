/**
 * Completes listed calls from GET {callPath} (spec 4.4: startedAt, endedAt, isPrivate, conversationUid),
 * at most `concurrency` requests at a time for one page (the API client's global caps apply on top).
 *
 * Enrichment never costs a record. Decisions:
 * - A call that cannot be enriched for a reason of its own is still published, unenriched, so the privacy
 *   policy redacts its customer number (privacy unknown = private); the reason is reported for a metric:
 *   - gone: 404/410, the call was deleted between listing and GET. Waiting for it cannot succeed.
 *   - refused: another 4xx of that call (not 401/429), e.g. 400, 403, 422 (SkippableError from the client).
 *   - invalid: the single-call body is unusable: fields the Avro schema would reject (the listed fields are
 *     fine), or a body larger than api.maxResponseBytes (API_CALL_TOO_LARGE from the client).
 *   - version_mismatch: the single call's updatedAt is not the listed one, so its fields describe another
 *     version; a record never mixes two versions. The newer version is listed later and enriched then.
 * - Any other failure (retriable after retries: timeouts, 5xx, bodies still malformed; fatal; abort)
 *   fails the whole page: the orchestrator does not commit a page with holes (the watermark does not move
 *   past the call, nothing is dead-lettered) and the other requests of the page are cancelled.
 * - With enrichment off, nothing is requested and every call is unenriched (hence redacted), no reason.
 */
import PQueue from 'p-queue';
import type { CallsApi } from '../api/calls-api-client.js';
import { mapEnrichment, type Enrichment, type ListedCall } from '../api/call-mapper.js';
import { SkippableError } from '../errors/index.js';
import { compareInstants, parseInstant } from './instant.js';

export type UnenrichedReason = 'gone' | 'refused' | 'invalid' | 'version_mismatch';

export interface EnrichedItem {
  listed: ListedCall;
  /** null: not enriched (enrichment off, or `unenriched` says why). */
  enrichment: Enrichment | null;
  /** Why a call was not enriched although enrichment is on; null otherwise. `detail` holds no secret. */
  unenriched: { reason: UnenrichedReason; detail: string } | null;
}

export interface EnricherOptions {
  api: Pick<CallsApi, 'getCall'>;
  enabled: boolean;
  concurrency: number;
}

/**
 * Whether a single-call body describes the listed version. A body without updatedAt cannot tell, and is
 * taken as the same version (the spec does not promise the field there); one with another instant, or a
 * value that is not a date-time, is not.
 */
export function sameVersion(listedUpdatedAt: string, body: Record<string, unknown>): boolean {
  const value = body.updatedAt;
  if (value === undefined || value === null) return true;
  if (typeof value !== 'string') return false;
  const single = parseInstant(value);
  const listed = parseInstant(listedUpdatedAt);
  return single !== null && listed !== null && compareInstants(single, listed) === 0;
}

export class Enricher {
  constructor(private readonly options: EnricherOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
      throw new RangeError('enrichConcurrency must be an integer >= 1');
  }

  /** Enriches the calls of one page, in their order. */
  async enrich(calls: readonly ListedCall[], signal?: AbortSignal): Promise<EnrichedItem[]> {
    if (!this.options.enabled || calls.length === 0)
      return calls.map((listed) => ({ listed, enrichment: null, unenriched: null }));
    const failFast = new AbortController();
    const combined = signal === undefined ? failFast.signal : AbortSignal.any([signal, failFast.signal]);
    const queue = new PQueue({ concurrency: this.options.concurrency });
    try {
      return await Promise.all(
        calls.map((listed) =>
          queue
            .add(() => this.enrichOne(listed, combined), { signal: combined })
            .catch((error: unknown) => {
              failFast.abort(error);
              throw error;
            }),
        ),
      );
    } finally {
      queue.clear();
    }
  }

  private async enrichOne(listed: ListedCall, signal: AbortSignal): Promise<EnrichedItem> {
    const without = (reason: UnenrichedReason, detail: string): EnrichedItem => ({
      listed,
      enrichment: null,
      unenriched: { reason, detail },
    });
    let body: Record<string, unknown> | null;
    try {
      body = await this.options.api.getCall(listed.uid, signal);
    } catch (error) {
      if (error instanceof SkippableError)
        return without(error.code === 'API_CALL_TOO_LARGE' ? 'invalid' : 'refused', error.message);
      throw error;
    }
    if (body === null) return without('gone', 'the call is gone (404/410)');
    if (!sameVersion(listed.updatedAt, body)) {
      const single = typeof body.updatedAt === 'string' ? body.updatedAt.slice(0, 64) : typeof body.updatedAt;
      return without('version_mismatch', `listed updatedAt ${listed.updatedAt}, single call ${single}`);
    }
    const mapped = mapEnrichment(body, listed.uid);
    return mapped.ok
      ? { listed, enrichment: mapped.enrichment, unenriched: null }
      : without('invalid', mapped.error.message);
  }
}
