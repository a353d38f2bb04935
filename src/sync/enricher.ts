/**
 * Completes listed calls from GET {callPath} (spec 4.4: startedAt, endedAt, isPrivate, conversationUid),
 * at most `concurrency` requests at a time for one page (the API client's global caps apply on top).
 *
 * Decisions:
 * - 404 (the call was deleted between listing and GET): the listed version is still published, not
 *   enriched, so the privacy policy redacts its customer number (privacy unknown = private). Dropping it
 *   would hide a version the listing showed; waiting for it cannot succeed.
 * - A single-call body whose fields the Avro schema would reject, or that stays malformed after the
 *   client's retries, is a problem of that one item: it becomes a SkippableError (dead-lettered) and the
 *   page goes on.
 * - Any other failure (retriable after retries, fatal, abort) fails the whole page: the orchestrator
 *   does not commit a page with holes, and the other requests of the page are cancelled.
 * - With enrichment off, nothing is requested and every call is unenriched (hence redacted).
 */
import PQueue from 'p-queue';
import type { CallsApi } from '../api/calls-api-client.js';
import { mapEnrichment, type Enrichment, type ListedCall } from '../api/call-mapper.js';
import { ConnectorError, SkippableError } from '../errors/index.js';

export type EnrichedItem =
  | { ok: true; listed: ListedCall; enrichment: Enrichment | null; gone: boolean }
  | { ok: false; listed: ListedCall; error: SkippableError };

export interface EnricherOptions {
  api: Pick<CallsApi, 'getCall'>;
  enabled: boolean;
  concurrency: number;
}

export class Enricher {
  constructor(private readonly options: EnricherOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
      throw new RangeError('enrichConcurrency must be an integer >= 1');
  }

  /** Enriches the calls of one page, in their order. */
  async enrich(calls: readonly ListedCall[], signal?: AbortSignal): Promise<EnrichedItem[]> {
    if (!this.options.enabled || calls.length === 0)
      return calls.map((listed) => ({ ok: true, listed, enrichment: null, gone: false }));
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
    let body: Record<string, unknown> | null;
    try {
      body = await this.options.api.getCall(listed.uid, signal);
    } catch (error) {
      if (error instanceof ConnectorError && error.code === 'API_MALFORMED_BODY') {
        return {
          ok: false,
          listed,
          error: new SkippableError('ITEM_SCHEMA_REJECTED', `call ${listed.uid}: ${error.message}`, {
            cause: error,
          }),
        };
      }
      throw error;
    }
    if (body === null) return { ok: true, listed, enrichment: null, gone: true };
    const mapped = mapEnrichment(body, listed.uid);
    return mapped.ok
      ? { ok: true, listed, enrichment: mapped.enrichment, gone: false }
      : { ok: false, listed, error: mapped.error };
  }
}
