/**
 * Removes credentials that travel inside free text: the userinfo of a URL (`https://user:pass@host`, as a
 * registry or proxy URL may be written) and the credential of an `Authorization`-style value
 * (`Bearer …`, `Basic …`). Key-based redaction (SECRET_KEYS) cannot see these: they sit inside strings such as
 * a config value, an error message or a cause's message that pino's `err` serializer appends.
 *
 * Used on every log line (the logger's last hook), on config dumps and on the CLI's final error line.
 * Idempotent; text without such a pattern is returned unchanged.
 */

/** `scheme://userinfo@` — the userinfo (user, password or a token used as the user) is removed whole. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@"'<>]+@/gi;

/** `Bearer <token>` / `Basic <base64>` as written in an Authorization header. */
const AUTH_SCHEME_CREDENTIAL = /\b(Bearer|Basic)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/g;

export const REDACTED = '[redacted]';

export function scrubSecretsInText(text: string): string {
  return text
    .replace(URL_USERINFO, (_match, scheme: string) => `${scheme}${REDACTED}@`)
    .replace(
      AUTH_SCHEME_CREDENTIAL,
      (_match, scheme: string, space: string) => `${scheme}${space}${REDACTED}`,
    );
}
