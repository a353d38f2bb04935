/**
 * A copy of a configuration that is safe to print: every secret-bearing key replaced by "[redacted]", and
 * credentials inside strings (URL userinfo such as `http://user:pass@registry`) removed.
 * Used by `validate-config` and start-up logs. The key list is the logger's, so both agree on what a secret is.
 */
import { SECRET_KEYS } from '../logging/logger.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';

const secretKeys = new Set(SECRET_KEYS);

export function redactSecrets<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => redactSecrets(item)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        secretKeys.has(k) && v !== undefined ? '[redacted]' : redactSecrets(v),
      ]),
    ) as T;
  }
  if (typeof value === 'string') return scrubSecretsInText(value) as T;
  return value;
}
