import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../src/errors/index.js';
import { createLogger } from '../../../src/logging/logger.js';

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~';

function randomSecret(random: () => number): string {
  const length = 16 + Math.floor(random() * 48);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return out;
}

function pick<T>(random: () => number, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)] as T;
}

function randomCase(random: () => number, text: string): string {
  return [...text].map((c) => (random() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');
}

const SECRET_KEY_NAMES = [
  'clientSecret',
  'accessToken',
  'refresh_token',
  'access_token',
  'password',
  'token',
];
const QUERY_NAMES = ['access_token', 'refresh_token', 'client_secret', 'code'];

/** Each way a secret can reach a log line: as a value, inside a message, inside an error and its cause. */
const PATHS: ReadonlyArray<
  (log: ReturnType<typeof createLogger>, secret: string, random: () => number) => void
> = [
  (log, secret, random) => {
    let value: Record<string, unknown> = { [pick(random, SECRET_KEY_NAMES)]: secret };
    for (let depth = Math.floor(random() * 12); depth > 0; depth--) value = { [`level${depth}`]: value };
    log.info(value, 'nested object');
  },
  (log, secret, random) =>
    log.warn(
      `request sent with Authorization: ${randomCase(random, pick(random, ['bearer', 'basic']))} ${secret}`,
    ),
  (log, secret, random) =>
    log.error({
      err: new Error(`GET https://api.test/v4/calls?${pick(random, QUERY_NAMES)}=${secret}&x=1 failed`),
    }),
  (log, secret, random) =>
    log.error(
      {
        err: new FatalError('AUTH_TOKEN_REQUEST_REFUSED', 'refused', {
          cause: new Error(`token endpoint said {"${pick(random, QUERY_NAMES)}": "${secret}"}`),
        }),
      },
      'token request failed',
    ),
  (log, secret) => log.info({ url: `https://svc:${secret}@registry.test/apis` }, 'registry'),
  (log, secret, random) =>
    log.info(`form body grant_type=refresh_token&${pick(random, QUERY_NAMES)}=${secret}`),
];

describe('secrets through every log path (property)', () => {
  it('never lets a random secret reach a log line, whatever the path, case or depth', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const random = generator(seed);
      let text = '';
      const destination = new Writable({
        write(chunk: Buffer, _encoding, done) {
          text += chunk.toString('utf8');
          done();
        },
      });
      const log = createLogger({ level: 'trace', format: 'json', destination });
      const secret = randomSecret(random);
      const path = Math.floor(random() * PATHS.length);
      PATHS[path]?.(log, secret, random);
      expect(text.length, `seed ${seed}, path ${path}`).toBeGreaterThan(0);
      expect(text.includes(secret), `seed ${seed}, path ${path}: ${text}`).toBe(false);
    }
  });
});
