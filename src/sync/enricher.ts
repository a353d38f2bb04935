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
import { SkippableError } from '../errors/index.js';
import { compareInstants, parseInstant } from '../time/instant.js';
import type { Enrichment, ListedCall, SingleCall, SingleCallVersion } from './model.js';
import type { CallsApi } from './ports.js';

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
export function sameVersion(listedUpdatedAt: string, version: SingleCallVersion): boolean {
  if (version.kind === 'absent') return true;
  if (version.kind === 'other') return false;
  const single = parseInstant(version.text);
  const listed = parseInstant(listedUpdatedAt);
  return single !== null && listed !== null && compareInstants(single, listed) === 0;
}

export class Enricher {
  constructor(private readonly options: EnricherOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
      throw new RangeError('enrichConcurrency must be an integer >= 1');
  }

  /**
   * Enriches the calls of one page, in their order: `concurrency` workers take the next call in turn.
   * (A p-queue and a composite AbortSignal per page cost about 5% of an enriched backfill's CPU in the
   * profile, bench/profile.ts; the requests below see one plain signal.)
   */
  async enrich(calls: readonly ListedCall[], signal?: AbortSignal): Promise<EnrichedItem[]> {
    if (!this.options.enabled || calls.length === 0)
      return calls.map((listed) => ({ listed, enrichment: null, unenriched: null }));
    // Aborted by the caller's signal or by the first failure: the page's other requests are cancelled.
    const failFast = new AbortController();
    const forward = (): void => failFast.abort(signal?.reason);
    if (signal?.aborted === true) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    const results: EnrichedItem[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < calls.length) {
        failFast.signal.throwIfAborted();
        const index = next++;
        results[index] = await this.enrichOne(calls[index] as ListedCall, failFast.signal);
      }
    };
    try {
      await Promise.all(
        Array.from({ length: Math.min(this.options.concurrency, calls.length) }, () =>
          worker().catch((error: unknown) => {
            failFast.abort(error);
            throw error;
          }),
        ),
      );
      return results;
    } finally {
      signal?.removeEventListener('abort', forward);
    }
  }

  private async enrichOne(listed: ListedCall, signal: AbortSignal): Promise<EnrichedItem> {
    const without = (reason: UnenrichedReason, detail: string): EnrichedItem => ({
      listed,
      enrichment: null,
      unenriched: { reason, detail },
    });
    let single: SingleCall | null;
    try {
      single = await this.options.api.getCall(listed.uid, signal);
    } catch (error) {
      if (error instanceof SkippableError)
        return without(error.code === 'API_CALL_TOO_LARGE' ? 'invalid' : 'refused', error.message);
      throw error;
    }
    if (single === null) return without('gone', 'the call is gone (404/410)');
    const { version } = single;
    if (!sameVersion(listed.updatedAt, version)) {
      const shown =
        version.kind === 'text' ? version.text.slice(0, 64) : version.kind === 'other' ? version.type : '';
      return without('version_mismatch', `listed updatedAt ${listed.updatedAt}, single call ${shown}`);
    }
    const mapped = single.enrichment;
    return mapped.ok
      ? { listed, enrichment: mapped.enrichment, unenriched: null }
      : without('invalid', mapped.error.message);
  }
}
