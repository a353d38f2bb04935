/**
 * The log lines about waits an API asked for that a scope does not take as asked:
 * - a wait that makes no sense (headers.ts `implausible`): the scope backs off instead; a warning naming
 *   the header and its value, since the API writes it in a form nothing reads and an operator should know;
 * - a wait beyond api.retry.maxRetryAfterMs: the scope holds for that long, then tries again; an info line.
 * Each once per scope, header and kind: an API that sends the same header on every answer does not flood the
 * log. Each hold itself shows in /status and the throttled metrics.
 *
 * Header values of rate limits carry no credentials; the value quoted is still bounded and scrubbed.
 */
import type { Logger } from '../../logging/logger.js';
import { scrubSecretsInText } from '../../logging/scrub-text.js';
import type { HeaderWait } from './headers.js';

/** Characters of a header value quoted in a log line. */
const VALUE_CHARS = 80;

export class HoldNotices {
  private readonly said = new Set<string>();

  constructor(
    private readonly logger: Logger,
    /** api.retry.maxRetryAfterMs: the longest hold. */
    private readonly maxHoldMs: number,
  ) {}

  /** A wait the scope `scope` acts on (a refusal's Retry-After, the reset of a spent quota). */
  acted(scope: string, wait: HeaderWait): void {
    if (wait.kind === 'implausible') {
      if (this.first(scope, wait.header, 'implausible'))
        this.logger.warn(
          {
            scope,
            header: wait.header,
            value: scrubSecretsInText(wait.raw.slice(0, VALUE_CHARS)),
          },
          'the calls API announced a rate-limit wait that reads as no plausible time; backing off instead (said once per scope and header)',
        );
    } else if (wait.holdMs > this.maxHoldMs && this.first(scope, wait.header, 'capped')) {
      this.logger.info(
        {
          scope,
          header: wait.header,
          form: wait.form,
          askedSeconds: Math.round(wait.holdMs / 1000),
          maxRetryAfterMs: this.maxHoldMs,
        },
        'the calls API asked to wait longer than api.retry.maxRetryAfterMs; the scope is parked that long at a time, then tries again (said once per scope and header)',
      );
    }
  }

  private first(scope: string, header: string, kind: string): boolean {
    const key = `${scope}\n${header}\n${kind}`;
    if (this.said.has(key)) return false;
    this.said.add(key);
    return true;
  }
}
