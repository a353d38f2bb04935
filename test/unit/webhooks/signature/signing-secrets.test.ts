import { generateKeyPairSync } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { missingFromEnvironment } from '../../../../src/config/environment-check.js';
import { parseConfig } from '../../../../src/config/load.js';
import { FatalError } from '../../../../src/errors/index.js';
import { signatureRule } from '../../../../src/webhooks/signature/signing-secrets.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

const SECRET_A = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const settings = (webhooks: object) =>
  parseConfig(
    {
      ...MINIMAL_CONFIG,
      webhooks: { enabled: true, ...webhooks },
    },
    {},
  ).webhooks;

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('the webhook signature rule at start', () => {
  it('takes every set variable of secretEnv, skipping unset ones (a rotation names both)', async () => {
    const rule = await signatureRule(settings({ signature: { secretEnv: ['NEW', 'OLD', 'GONE'] } }), {
      NEW: SECRET_A,
      OLD: ` ${SECRET_B}\n`,
    });
    expect(rule).toMatchObject({ scheme: 'standard-webhooks', toleranceMs: 300_000 });
    expect(rule.scheme === 'standard-webhooks' && rule.keys).toEqual([
      Buffer.alloc(32, 1),
      Buffer.alloc(32, 2),
    ]);
  });

  it('reads secret files one secret a line, and refuses one that others may read', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webhook-secrets-'));
    const file = join(dir, 'secrets');
    await writeFile(file, `${SECRET_A}\n\n${SECRET_B}\n`, { mode: 0o600 });
    const rule = await signatureRule(settings({ signature: { secretEnv: [], secretFiles: [file] } }), {});
    expect(rule.scheme === 'standard-webhooks' && rule.keys.length).toBe(2);
    if (process.platform === 'win32') return;
    await chmod(file, 0o644);
    await expect(signatureRule(settings({ signature: { secretFiles: [file] } }), {})).rejects.toMatchObject({
      code: 'SECRET_FILE_TOO_OPEN',
    });
  });

  it('fails with WEBHOOK_SECRET_MISSING when no secret is set, or one the scheme cannot use, without echoing it', async () => {
    await expect(signatureRule(settings({}), {})).rejects.toMatchObject({ code: 'WEBHOOK_SECRET_MISSING' });
    const error = await signatureRule(settings({}), {
      CALLS_CONNECTOR_WEBHOOK_SECRET: 'whsec_!!plain-secret!!',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('WEBHOOK_SECRET_MISSING');
    expect((error as FatalError).message).not.toContain('plain-secret');
  });

  it('uses the UTF-8 bytes of the secret for a configured HMAC scheme', async () => {
    const rule = await signatureRule(
      settings({ signature: { scheme: 'hmac' }, replay: { waiveProtection: true } }),
      {
        CALLS_CONNECTOR_WEBHOOK_SECRET: 'shared',
      },
    );
    expect(rule).toMatchObject({ scheme: 'hmac', hmac: { header: 'x-signature' } });
    expect(rule.scheme === 'hmac' && rule.keys).toEqual([Buffer.from('shared')]);
  });

  it('checks nothing only when allowUnsigned says so, secrets or not', async () => {
    expect(await signatureRule(settings({ allowUnsigned: true }), {})).toEqual({ scheme: 'none' });
  });

  it('decodes secrets in the configured key encoding, and reads whpk_ public keys beside whsec_ secrets', async () => {
    const hex = await signatureRule(
      settings({ signature: { scheme: 'hmac', keyEncoding: 'hex' }, replay: { waiveProtection: true } }),
      { CALLS_CONNECTOR_WEBHOOK_SECRET: '00ff' },
    );
    expect(hex.scheme === 'hmac' && hex.keys).toEqual([Buffer.from([0, 255])]);
    const { publicKey } = generateKeyPairSync('ed25519');
    const whpk = `whpk_${Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('base64')}`;
    const both = await signatureRule(settings({ signature: { secretEnv: ['A', 'B'] } }), {
      A: SECRET_A,
      B: whpk,
    });
    expect(both.scheme === 'standard-webhooks' && [both.keys.length, both.publicKeys?.length]).toEqual([
      1, 1,
    ]);
  });

  it('refuses a secret not in its key encoding, at start and in validate-config, without echoing it', async () => {
    const config = parseConfig(
      {
        ...MINIMAL_CONFIG,
        webhooks: {
          enabled: true,
          signature: { scheme: 'hmac', keyEncoding: 'hex' },
          replay: { waiveProtection: true },
        },
      },
      {},
    );
    const env = { CALLS_CONNECTOR_WEBHOOK_SECRET: 'not-hex-at-all' };
    const error = await signatureRule(config.webhooks, env).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'WEBHOOK_SECRET_MISSING' });
    expect((error as Error).message).toMatch(/secret #1: the secret is not hex/);
    expect((error as Error).message).not.toContain('not-hex-at-all');
    const problems = await missingFromEnvironment(config, env);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^webhooks\.signature\.secretEnv: webhook secret #1: the secret is not hex/);
    expect(problems.join()).not.toContain('not-hex-at-all');
  });
});
