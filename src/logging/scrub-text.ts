/**
 * Removes credentials that travel inside free text:
 * - the userinfo of a URL (`https://user:pass@host`, as a registry or proxy URL may be written);
 * - the credential of an `Authorization`-style value (`Bearer …`, `basic …`, any case);
 * - OAuth parameters in a query string or form body (`access_token=…`, `refresh_token=…`, `code=…`);
 * - the string value of a secret-named key in JSON text (`"refresh_token":"…"`, `"clientSecret": "…"`), at
 *   any depth: a logged object deeper than pino's path-based redaction reaches is still covered here, and
 *   so is JSON text inside a message (a token endpoint's answer quoted in an error).
 * Key-based redaction (SECRET_KEYS) cannot see these: they sit inside strings such as a config value, an error
 * message or a cause's message that pino's `err` serializer appends.
 *
 * Used on every log line (the logger's last hook), on config dumps and on the CLI's final error line.
 * Idempotent; text without such a pattern is returned unchanged.
 *
 * And, where the secrets are known (`scrubKnownSecrets`): each of them wherever it stands, for text that came
 * back from a server a request sent them to (a token endpoint may echo a refresh token or client secret).
 */

/** `scheme://userinfo@` — the userinfo (user, password or a token used as the user) is removed whole. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@"'<>]+@/gi;

/** `Bearer <token>` / `Basic <base64>` as written in an Authorization header, in any letter case. */
const AUTH_SCHEME_CREDENTIAL = /\b(Bearer|Basic)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/gi;

/** OAuth parameter names whose values are credentials, in query strings, form bodies and JSON. */
const PARAMETER_NAMES =
  'access_token|refresh_token|id_token|client_secret|code_verifier|accessToken|refreshToken|clientSecret|staticToken|password|authorization';

/** `name=value` in a query string or form body (`?access_token=…&`); `code=` only when long (not an error code). */
const QUERY_PARAMETER = new RegExp(
  `([?&\\s"';,(]|^)(${PARAMETER_NAMES}|code)=(?!\\[redacted\\])([^&\\s"'<>;,)]+)`,
  'gi',
);

/** `"name": "value"` in JSON text, escaped quotes included; the name matched case-insensitively. */
const JSON_STRING_MEMBER = new RegExp(
  `("(${PARAMETER_NAMES}|token|key|code)"\\s*:\\s*)"(?!\\[redacted\\]")((?:[^"\\\\]|\\\\.)*)"`,
  'gi',
);

/**
 * The same inside a JSON string (JSON text quoted in a message, then serialized again: `\"name\": \"value\"`).
 * The value stops at the first backslash: a shorter match still removes what a token is made of.
 */
const ESCAPED_JSON_STRING_MEMBER = new RegExp(
  `(\\\\"(${PARAMETER_NAMES}|token|key|code)\\\\"\\s*:\\s*)\\\\"(?!\\[redacted\\])([^"\\\\]*)`,
  'gi',
);

/**
 * An error code (`AUTH_GRANT_REVOKED`, `cursor_expired`, `invalid_grant`) may follow `code`; an
 * authorization code does not look like one: error codes are single-case words joined by `_`, `.` or `-`,
 * or a single word without digits, while authorization codes are random (mixed case, or hex digits).
 * Keeping error codes readable matters: they are what an operator needs from an API error body.
 */
const ERROR_CODE_VALUE =
  /^(?:[A-Z][A-Z0-9]*(?:[_.-][A-Z0-9]+)+|[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+|[A-Za-z][a-z]{0,31})$/;

export const REDACTED = '[redacted]';

export function scrubSecretsInText(text: string): string {
  return text
    .replace(URL_USERINFO, (_match, scheme: string) => `${scheme}${REDACTED}@`)
    .replace(
      AUTH_SCHEME_CREDENTIAL,
      (_match, scheme: string, space: string) => `${scheme}${space}${REDACTED}`,
    )
    .replace(QUERY_PARAMETER, (match, before: string, name: string, value: string) =>
      name.toLowerCase() === 'code' && ERROR_CODE_VALUE.test(value) ? match : `${before}${name}=${REDACTED}`,
    )
    .replace(JSON_STRING_MEMBER, (match, member: string, name: string, value: string) =>
      name.toLowerCase() === 'code' && ERROR_CODE_VALUE.test(value) ? match : `${member}"${REDACTED}"`,
    )
    .replace(ESCAPED_JSON_STRING_MEMBER, (match, member: string, name: string, value: string) =>
      name.toLowerCase() === 'code' && ERROR_CODE_VALUE.test(value) ? match : `${member}\\"${REDACTED}`,
    );
}

/**
 * Replaces every occurrence of each of `secrets` in `text` by "[redacted]". Secrets shorter than 4 characters
 * are left alone: replacing them would shred ordinary text and hide nothing.
 */
export function scrubKnownSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join(REDACTED);
  return out;
}
