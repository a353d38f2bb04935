/**
 * The calls API client: listing pages and single calls, with the retry policy applied.
 *
 * Why a small loop of our own rather than undici's RetryHandler / retry interceptor: we need a metric per
 * retry with its reason, the 401 "refresh the token once, then retry once" step (which changes the request's
 * headers between attempts), retries of a 2xx whose body is malformed (undici only sees statuses and
 * socket errors), Retry-After capped by policy, and waits cancelled by the caller's AbortSignal. The loop is
 * thin because the decisions are pure functions (response-classifier.ts, retry-policy.ts).
 *
 * Errors out of this client:
 * - InvalidCursorError: the listing rejected the cursor we sent (any 4xx but 401/403/429, whatever its
 *   body); the traversal restarts from its watermark.
 * - SkippableError API_CALL_REFUSED: a single-call GET got a 4xx (not 401/404/410/429): that call is
 *   published unenriched.
 * - RetriableError API_MALFORMED_BODY: a single-call body stayed malformed after the retries; the page
 *   fails and is fetched again later (the call is never dead-lettered for it).
 * - RetriableError (API_UNAVAILABLE, API_RETRY_AFTER_TOO_LONG, API_UNAUTHORIZED, ...): try later.
 *   API_UNAUTHORIZED is a 401 again right after a successful refresh: the refresh itself worked, so the
 *   grant is alive and the next try gets a fresh chance; a grant that is really gone fails the refresh
 *   instead (the TokenProvider throws a FatalError such as AUTH_GRANT_REVOKED).
 * - FatalError (API_FORBIDDEN, API_MALFORMED_BODY of the listing, API_BAD_REQUEST, API_NOT_FOUND, API_TLS, ...).
 *
 * Every message of an answered request names the HTTP status and a bounded, scrubbed excerpt of the body.
 * - the caller's abort reason, when its signal fires.
 */
import type { ApiConfig } from '../config/schema.js';
import { ConnectorError, FatalError, RetriableError, SkippableError } from '../errors/index.js';
import type { TokenProvider } from './token-provider.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { statusClass, type ConnectorMetrics } from '../metrics/metrics.js';
import {
  InvalidCursorError,
  type CallsApi,
  type ListedPage,
  type PageRequest,
  type RequestHint,
} from '../sync/ports.js';
import type { SingleCall } from '../sync/model.js';
import { systemClock, type Clock } from '../time/clock.js';
import type { HttpClient, HttpResponse } from './http-transport.js';
import {
  bodyExcerpt,
  classifyAnswer,
  describeAnswer,
  UNPARSABLE_BODY,
  type Endpoint,
} from './response-classifier.js';
import { mapListedItem, mapSingleCall } from './call-mapper.js';
import { decodeCallBody, decodeListPage, type Decoded } from './response-decoder.js';
import { backoffDelayMs, mayRetry } from '../time/backoff.js';
import { answerClockMs } from './rate-limit/headers.js';
/** The client's retries and rate-limit answers. */
export type CallsApiClientMetrics = Pick<ConnectorMetrics, 'apiRateLimited' | 'apiRetries'>;

export type ClientSettings = Pick<
  ApiConfig,
  | 'listPath'
  | 'callPath'
  | 'itemsField'
  | 'nextCursorField'
  | 'callField'
  | 'tokenHeader'
  | 'tokenPrefix'
  | 'invalidCursorStatuses'
  | 'invalidCursorErrorCodes'
  | 'errorCodeField'
  | 'errorMessageField'
  | 'retry'
>;

export interface CallsApiClientOptions {
  http: HttpClient;
  /** The grant whose limiter scope this client's requests use (api.rateLimit.scope `grant`). */
  grant?: string;
  tokens: TokenProvider;
  settings: ClientSettings;
  metrics: CallsApiClientMetrics;
  logger?: Logger;
  clock?: Clock;
}

/** The query string of a listing request (spec 4.3): a cursor is sent alone, with limit (rule 3). */
export function listQuery(request: PageRequest): Record<string, string> {
  if (request.kind === 'next') return { cursor: request.cursor, limit: String(request.limit) };
  const query: Record<string, string> = {
    order: request.order,
    locationUid: request.locationUid,
    limit: String(request.limit),
  };
  if (request.since !== null) query.since = request.since;
  return query;
}

const NOT_FOUND = Symbol('not found');

/** Shorter values are not taken for tokens: replacing them would garble messages and hide nothing. */
const MIN_SCRUBBED_TOKEN_LENGTH = 8;

/**
 * Removes the access token from text the API wrote (its error message): some APIs echo the credential
 * they refused, and error messages end up in logs and the status view.
 */
function withoutToken(text: string, token: string): string {
  return token.length < MIN_SCRUBBED_TOKEN_LENGTH ? text : text.split(token).join('[redacted]');
}

/** The body excerpt quoted in errors: bounded, scrubbed of credentials and of the token we sent. */
function excerptOf(text: string, token: string): string {
  return withoutToken(bodyExcerpt(withoutToken(text, token)), token);
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return UNPARSABLE_BODY;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return UNPARSABLE_BODY;
  }
}

export class CallsApiClient implements CallsApi {
  private readonly http: HttpClient;
  private readonly tokens: TokenProvider;
  private readonly settings: ClientSettings;
  private readonly metrics: CallsApiClientMetrics;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly grant: string | undefined;

  constructor(options: CallsApiClientOptions) {
    if (!options.settings.callPath.includes('{uid}')) throw new TypeError('api.callPath must contain {uid}');
    this.http = options.http;
    this.tokens = options.tokens;
    this.settings = options.settings;
    this.metrics = options.metrics;
    this.logger = options.logger ?? silentLogger();
    this.clock = options.clock ?? systemClock;
    this.grant = options.grant;
  }

  async listPage(request: PageRequest, signal?: AbortSignal, hint?: RequestHint): Promise<ListedPage> {
    const result = await this.execute(
      'list',
      this.settings.listPath,
      listQuery(request),
      request.kind === 'next',
      (body) => decodeListPage(body, this.settings),
      signal,
      hint,
    );
    if (result === NOT_FOUND) throw new FatalError('API_NOT_FOUND', 'the listing answered 404');
    return {
      items: result.items.map((item) => mapListedItem(item, request.locationUid)),
      nextCursor: result.nextCursor,
    };
  }

  async getCall(uid: string, signal?: AbortSignal, hint?: RequestHint): Promise<SingleCall | null> {
    const path = this.settings.callPath.replace('{uid}', encodeURIComponent(uid));
    const result = await this.execute(
      'get_call',
      path,
      {},
      false,
      (body) => decodeCallBody(body, this.settings.callField),
      signal,
      hint,
    );
    return result === NOT_FOUND ? null : mapSingleCall(result, uid);
  }

  private async execute<T>(
    endpoint: Endpoint,
    path: string,
    query: Record<string, string>,
    cursorSent: boolean,
    decode: (body: unknown) => Decoded<T>,
    signal: AbortSignal | undefined,
    hint: RequestHint | undefined,
  ): Promise<T | typeof NOT_FOUND> {
    const policy = this.settings.retry;
    let token = await this.tokens.accessToken(signal);
    let refreshed = false;
    let attempts = 0;
    let throttles = 0;
    const routing = {
      ...(this.grant === undefined ? {} : { grant: this.grant }),
      ...(hint === undefined ? {} : { priority: hint.priority }),
    };
    let lastProblem = '';

    const retryAfter = async (reason: string, delayMs: number | null): Promise<boolean> => {
      if (!mayRetry(policy, attempts)) return false;
      const wait = delayMs ?? backoffDelayMs(policy, attempts, this.clock.random());
      this.metrics.apiRetries.inc({ endpoint, reason });
      this.logger.debug(
        { endpoint, reason, attempt: attempts, waitMs: wait, problem: lastProblem },
        'retrying calls API request',
      );
      signal?.throwIfAborted();
      await this.clock.sleep(wait, signal);
      return true;
    };

    for (;;) {
      attempts += 1;
      const headers = {
        [this.settings.tokenHeader]: `${this.settings.tokenPrefix}${token}`,
        accept: 'application/json',
      };
      let response: HttpResponse;
      try {
        // The transport times the exchange (api_request_duration_seconds) apart from its limiter's wait.
        response = await this.http.send({ endpoint, path, query, headers, ...routing }, signal);
      } catch (error) {
        if (signal?.aborted === true) throw signal.reason;
        if (!(error instanceof ConnectorError) || !error.retriable) throw error;
        // A parked scope: retrying now is refused again; the scheduler parks the location until the hold ends.
        if (error.code === 'API_SCOPE_THROTTLED') throw error;
        // A single call whose answer outgrows api.maxResponseBytes will do so on every try: that call is
        // published unenriched (customer number redacted) rather than fail its page for ever.
        if (endpoint === 'get_call' && error.code === 'API_RESPONSE_TOO_LARGE')
          throw new SkippableError(
            'API_CALL_TOO_LARGE',
            `${error.message}: the call is published unenriched; raise api.maxResponseBytes to enrich it`,
            { cause: error },
          );
        lastProblem = error.message;
        if (await retryAfter(error.code === 'API_TIMEOUT' ? 'timeout' : 'network', null)) continue;
        throw new RetriableError(
          'API_UNAVAILABLE',
          `the calls API failed ${attempts} times on ${endpoint}: ${lastProblem}`,
          { cause: error },
        );
      }

      const body = parseJson(response.body);
      // Only errors quote the body: a successful answer (every poll) does not pay for scrubbing it.
      let quoted: string | undefined;
      const excerptNow = (): string => (quoted ??= excerptOf(response.body, token));
      const verdict = classifyAnswer(
        {
          status: response.status,
          body,
          get excerpt() {
            return excerptNow();
          },
          retryAfter: response.header('retry-after'),
        },
        {
          ...this.settings,
          endpoint,
          cursorSent,
          nowMs: answerClockMs(response.header('date'), this.clock.now()),
          policy,
        },
      );
      switch (verdict.kind) {
        case 'throttled': {
          // Flow control, not a failure: sent again, never using up an attempt. The transport's limiter
          // holds the whole scope until Retry-After (or a backoff), so the request waits there; a client
          // without such a limiter (tests, tools) waits here instead.
          if (response.status === 429) this.metrics.apiRateLimited.inc({ endpoint });
          this.metrics.apiRetries.inc({ endpoint, reason: 'rate_limited' });
          attempts -= 1;
          throttles += 1;
          if (this.http.pacesRefusals !== true) {
            signal?.throwIfAborted();
            await this.clock.sleep(
              verdict.delayMs ?? backoffDelayMs(policy, throttles, this.clock.random()),
              signal,
            );
          }
          continue;
        }
        case 'ok': {
          const decoded = decode(body);
          if (decoded.ok) return decoded.value;
          lastProblem = `${decoded.problem} (${describeAnswer(response.status, excerptNow())})`;
          if (await retryAfter('malformed_body', null)) continue;
          throw malformed(endpoint, attempts, lastProblem);
        }
        case 'retry': {
          lastProblem =
            verdict.reason === 'malformed_body'
              ? `the body is not JSON (${describeAnswer(response.status, excerptNow())})`
              : describeAnswer(verdict.status, excerptNow());
          const reason = verdict.reason === 'status' ? statusClass(verdict.status) : verdict.reason;
          if (await retryAfter(reason, verdict.delayMs)) continue;
          if (verdict.reason === 'malformed_body') throw malformed(endpoint, attempts, lastProblem);
          throw new RetriableError(
            'API_UNAVAILABLE',
            `the calls API failed ${attempts} times on ${endpoint}: ${lastProblem}`,
          );
        }
        case 'refresh-auth': {
          if (refreshed) {
            throw new RetriableError(
              'API_UNAUTHORIZED',
              `the calls API rejected a freshly refreshed token (${describeAnswer(401, excerptNow())}); trying again later`,
            );
          }
          refreshed = true;
          attempts -= 1; // the retry after a refresh is the one extra attempt the refresh buys, not a backoff retry
          token = await this.tokens.refreshAfterRejection(token, signal);
          continue;
        }
        case 'invalid-cursor':
          throw new InvalidCursorError({
            apiCode: verdict.errorCode,
            status: verdict.status,
            recognised: verdict.recognised,
            detail: verdict.detail,
          });
        case 'not-found':
          return NOT_FOUND;
        case 'skip':
          throw new SkippableError(verdict.code, verdict.message);
        case 'give-up':
          throw new RetriableError(verdict.code, withoutToken(verdict.message, token));
        case 'fatal':
          throw new FatalError(verdict.code, withoutToken(verdict.message, token));
      }
    }
  }
}

/**
 * A body still malformed after the retries. The listing's is fatal for the location (its pages cannot be
 * read); a single call's is retriable: the page fails and is fetched again later, so a good listed call is
 * never dead-lettered, nor published past, because its enrichment answer was garbled.
 */
function malformed(endpoint: Endpoint, attempts: number, problem: string): ConnectorError {
  const message = `the calls API sent a malformed ${endpoint} body ${attempts} times: ${problem}`;
  return endpoint === 'get_call'
    ? new RetriableError('API_MALFORMED_BODY', message)
    : new FatalError('API_MALFORMED_BODY', message);
}
