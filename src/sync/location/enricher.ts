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
 *   - unavailable: a poison call. Its GET failed transiently (after the client's retries) on
 *     `poisonPageAttempts` attempts of its page while the API answered others: waiting for it stalls the
 *     whole location for ever.
 * - A transient failure (retriable after retries: timeouts, 5xx, bodies still malformed) fails the whole
 *   page, once the page's other calls are done: the orchestrator does not commit a page with holes (the
 *   watermark does not move past the call, nothing is dead-lettered), and the answers the others got are
 *   kept for the page's next attempt.
 * - Finished work is kept: the answer of each call version (uid, updatedAt and the listed fields) is
 *   remembered (the last `reuseCapacity`, and never fewer than the largest page enriched so far plus
 *   `reuseCapacity`, so a page larger than the cache does not evict its own answers before its retry),
 *   so a page retried after any failure (a poison strike, a commit that failed, a restart of the traversal)
 *   requests only the calls it has no answer for: progress under throttling or faults is monotonic.
 * - A fatal error or an abort fails the page at once and cancels its other requests.
 * - With enrichment off, nothing is requested and every call is unenriched (hence redacted), no reason.
 * - Answers have an age (EnrichedItem.answeredAtMs, on the injected clock): a page that waited between its
 *   preparation and its commit has its enrichments older than privacy.maxEnrichmentAgeMs asked again
 *   (`refresh`, called by the orchestrator before the commit), so the privacy rule (privacy.ts) never judges
 *   a number by an answer older than that bound.
 */
import { ConnectorError, SkippableError } from '../../errors/index.js';
import { compareInstants, parseInstant } from '../../time/instant.js';
import type { Enrichment, ListedCall, SingleCall, SingleCallVersion } from '../model.js';
import type { CallsApi, RequestHint } from '../ports.js';
import type { Clock } from '../../time/clock.js';

export type UnenrichedReason = 'gone' | 'refused' | 'invalid' | 'version_mismatch' | 'unavailable';

export interface EnrichedItem {
  listed: ListedCall;
  /** null: not enriched (enrichment off, or `unenriched` says why). */
  enrichment: Enrichment | null;
  /** Why a call was not enriched although enrichment is on; null otherwise. `detail` holds no secret. */
  unenriched: { reason: UnenrichedReason; detail: string } | null;
  /**
   * When the single-call answer was received, on the enricher's clock (EnricherOptions.clock); unset when
   * nothing was asked (enrichment off) or no clock was given.
   */
  answeredAtMs?: number;
}

export interface EnricherOptions {
  api: Pick<CallsApi, 'getCall'>;
  enabled: boolean;
  concurrency: number;
  /** Page attempts with a transient failure of one call after which it is published unenriched (default 5). */
  poisonPageAttempts?: number;
  /** How many call versions' answers are remembered for retried pages (default 10,000). */
  reuseCapacity?: number;
  /**
   * The clock each answer is stamped with (EnrichedItem.answeredAtMs), so a page whose answers grew older
   * than a bound is enriched again before it commits (LocationSync, privacy.maxEnrichmentAgeMs). Unset (unit
   * tests that do not care): answers carry no time and never count as old.
   */
  clock?: Clock;
}

/** What a page retried for one call's failure must not ask again: one call version's outcome. */
type Answer = Pick<EnrichedItem, 'enrichment' | 'unenriched' | 'answeredAtMs'>;

/**
 * A Map that forgets its oldest entries beyond `capacity` (insertion order; a hit moves the key last).
 * Bounded memory: an entry is a call's enrichment, a few hundred bytes.
 */
class Recent<V> {
  private readonly entries = new Map<string, V>();
  constructor(private capacity: number) {}
  /** Never holds fewer than `capacity` entries from now on. */
  atLeast(capacity: number): void {
    this.capacity = Math.max(this.capacity, capacity);
  }
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
  delete(key: string): void {
    this.entries.delete(key);
  }
  get size(): number {
    return this.entries.size;
  }
}

/**
 * A call version: answers and strikes are kept per version, a newer one is asked again. updatedAt is not
 * unique (spec 4.3 rule 5): a call changed again within one instant keeps it, so the listed fields are part
 * of the key too; its new listing then asks again rather than reuse what the old version answered (its
 * isPrivate may have changed).
 */
function versionKey(listed: ListedCall): string {
  return JSON.stringify(listed);
}

/**
 * Whether an item's enrichment was answered before `notBeforeMs`: an answer too old to decide privacy by
 * (privacy.maxEnrichmentAgeMs). Only an enrichment can publish a number; an unenriched item is redacted
 * whatever its age, and an item without a time (no clock) never counts as old.
 */
export function answerOlderThan(item: EnrichedItem, notBeforeMs: number): boolean {
  return item.enrichment !== null && item.answeredAtMs !== undefined && item.answeredAtMs < notBeforeMs;
}

/** A transient failure of one call's GET: a strike towards publishing it unenriched (not the token's 401). */
function isTransient(error: unknown): error is ConnectorError {
  return error instanceof ConnectorError && error.retriable && error.code !== 'API_UNAUTHORIZED';
}

export const DEFAULT_POISON_PAGE_ATTEMPTS = 5;
const DEFAULT_REUSE_CAPACITY = 10_000;

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
  private readonly answers: Recent<Answer>;
  /** Page attempts on which a call version's GET failed transiently. */
  private readonly strikes: Recent<number>;
  private readonly poisonPageAttempts: number;
  private readonly reuseCapacity: number;
  /** Single-call answers received, all pages: evidence the API answers while one call keeps failing. */
  private answered = 0;

  constructor(private readonly options: EnricherOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
      throw new RangeError('enrichConcurrency must be an integer >= 1');
    this.poisonPageAttempts = options.poisonPageAttempts ?? DEFAULT_POISON_PAGE_ATTEMPTS;
    if (!Number.isInteger(this.poisonPageAttempts) || this.poisonPageAttempts < 1)
      throw new RangeError('poisonCallPageAttempts must be an integer >= 1');
    this.reuseCapacity = options.reuseCapacity ?? DEFAULT_REUSE_CAPACITY;
    this.answers = new Recent(this.reuseCapacity);
    this.strikes = new Recent(this.reuseCapacity);
  }

  /**
   * Enriches the calls of one page, in their order: `concurrency` workers take the next call in turn;
   * calls answered before (same uid and updatedAt) are not requested again.
   * (A p-queue and a composite AbortSignal per page cost about 5% of an enriched backfill's CPU in the
   * profile, bench/profile.ts; the requests below see one plain signal.)
   */
  async enrich(
    calls: readonly ListedCall[],
    signal?: AbortSignal,
    hint?: RequestHint,
    notBeforeMs?: number,
  ): Promise<EnrichedItem[]> {
    if (!this.options.enabled || calls.length === 0)
      return calls.map((listed) => ({ listed, enrichment: null, unenriched: null }));
    const answeredBefore = this.answered;
    // A page larger than the cache would evict its own first answers while it runs (an LRU scan): its retry,
    // after one call's transient failure, would then ask every call again, and fail again somewhere.
    this.answers.atLeast(calls.length + this.reuseCapacity);
    this.strikes.atLeast(calls.length + this.reuseCapacity);
    // Aborted by the caller's signal or by the first failure: the page's other requests are cancelled.
    const failFast = new AbortController();
    const forward = (): void => failFast.abort(signal?.reason);
    if (signal?.aborted === true) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    const results: EnrichedItem[] = [];
    // Transient failures wait for the page's other calls, whose answers are kept for its next attempt.
    const failed: { listed: ListedCall; error: ConnectorError }[] = [];
    let reused = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < calls.length) {
        failFast.signal.throwIfAborted();
        const index = next++;
        const listed = calls[index] as ListedCall;
        const known = this.answers.get(versionKey(listed));
        if (
          known !== undefined &&
          (notBeforeMs === undefined || !answerOlderThan({ listed, ...known }, notBeforeMs))
        ) {
          reused += 1;
          results[index] = { listed, ...known };
          continue;
        }
        try {
          const item = await this.enrichOne(listed, failFast.signal, hint);
          this.answers.set(versionKey(listed), {
            enrichment: item.enrichment,
            unenriched: item.unenriched,
            ...(item.answeredAtMs !== undefined && { answeredAtMs: item.answeredAtMs }),
          });
          this.strikes.delete(versionKey(listed));
          results[index] = item;
        } catch (error) {
          if (failFast.signal.aborted || !isTransient(error)) throw error;
          failed.push({ listed, error });
        }
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
    } finally {
      signal?.removeEventListener('abort', forward);
    }
    if (failed.length === 0) return results;
    // A strike counts only while the API answers other calls (of this page now or before, or of any page
    // during this attempt): an outage of the single-call endpoint strikes no call.
    const apiAnswers = reused > 0 || this.answered > answeredBefore;
    for (const { listed, error } of failed) {
      if (!apiAnswers) continue;
      const key = versionKey(listed);
      const strikes = (this.strikes.get(key) ?? 0) + 1;
      if (strikes < this.poisonPageAttempts) {
        this.strikes.set(key, strikes);
        continue;
      }
      this.strikes.delete(key);
      const unenriched = {
        reason: 'unavailable' as const,
        detail:
          `GET failed on ${strikes} page attempts while the API answered other calls: ${error.message}`.slice(
            0,
            500,
          ),
      };
      this.answers.set(key, { enrichment: null, unenriched });
      results[calls.indexOf(listed)] = { listed, enrichment: null, unenriched };
    }
    const unanswered = failed.find(({ listed }) => results[calls.indexOf(listed)] === undefined);
    if (unanswered === undefined) return results;
    throw unanswered.error;
  }

  /**
   * `items` (a prepared page's) with every enrichment answered before `notBeforeMs` asked again, oldest
   * first, through `enrich` (the answers since then reused): a page that waited for its commit publishes no number on a
   * privacy answer older than the bound (privacy.maxEnrichmentAgeMs). `items` as given when none is that old.
   */
  async refresh(
    items: readonly EnrichedItem[],
    notBeforeMs: number,
    signal?: AbortSignal,
    hint?: RequestHint,
  ): Promise<readonly EnrichedItem[]> {
    if (!items.some((item) => answerOlderThan(item, notBeforeMs))) return items;
    // Oldest first: the answers nearest the bound are asked before those that have time left.
    const order = items.map((_, i) => i);
    const age = (i: number): number => items[i]?.answeredAtMs ?? Number.POSITIVE_INFINITY;
    order.sort((a, b) => age(a) - age(b));
    const answered = await this.enrich(
      order.map((i) => (items[i] as EnrichedItem).listed),
      signal,
      hint,
      notBeforeMs,
    );
    const result = new Array<EnrichedItem>(items.length);
    order.forEach((i, k) => (result[i] = answered[k] as EnrichedItem));
    return result;
  }

  private async enrichOne(
    listed: ListedCall,
    signal: AbortSignal,
    hint?: RequestHint,
  ): Promise<EnrichedItem> {
    let answeredAtMs: number | undefined;
    const stamped = (item: EnrichedItem): EnrichedItem =>
      answeredAtMs === undefined ? item : { ...item, answeredAtMs };
    const without = (reason: UnenrichedReason, detail: string): EnrichedItem =>
      stamped({ listed, enrichment: null, unenriched: { reason, detail } });
    let single: SingleCall | null;
    try {
      single = await this.options.api.getCall(listed.uid, signal, hint);
      this.answered += 1;
      answeredAtMs = this.options.clock?.now();
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
      ? stamped({ listed, enrichment: mapped.enrichment, unenriched: null })
      : without('invalid', mapped.error.message);
  }
}
