import { afterEach, describe, expect, it } from 'vitest';
import { StaticTokenProvider, type TokenProvider } from '../../../src/api/token-provider.js';
import { FatalError } from '../../../src/errors/index.js';
import { grantCheck, kafkaCheck, schemaRegistryCheck } from '../../../src/ops/checks.js';
import { ManualClock } from '../../support/clock.js';
import { fakeRegistry, type FakeRegistry } from '../../support/registry.js';

const registries: FakeRegistry[] = [];

afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.close()));
});

/** A fake registry answering every request with `status` (closed after the test). */
async function startRegistry(status: number): Promise<FakeRegistry> {
  const started = await fakeRegistry(status);
  registries.push(started);
  return started;
}

describe('schemaRegistryCheck', () => {
  it('passes when GET {url}/subjects answers 200', async () => {
    const registry = await startRegistry(200);
    const { name, check } = schemaRegistryCheck({ url: `${registry.base}/apis/ccompat/v7` });
    expect(name).toBe('schema_registry');
    expect(await check()).toMatchObject({ name: 'schema_registry', ok: true });
    expect(registry.seen.map((r) => r.url)).toEqual(['/apis/ccompat/v7/subjects']);
  });

  it('fails naming the status when the registry answers an error', async () => {
    const registry = await startRegistry(503);
    const result = await schemaRegistryCheck({ url: registry.base }).check();
    expect(result.ok).toBe(false);
    expect(result.detail).toContain('HTTP 503');
  });

  it('sends credentials as basic auth and never shows them in the detail', async () => {
    const registry = await startRegistry(401);
    const url = registry.base.replace('http://', 'http://reg-user:s3cr3t-pass@');
    const result = await schemaRegistryCheck({ url }).check();
    expect(registry.seen[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('reg-user:s3cr3t-pass').toString('base64')}`,
    );
    expect(result.detail).not.toContain('s3cr3t-pass');
    expect(result.detail).not.toContain('reg-user');
  });

  it('throws when nothing listens, which readiness reports as a failed check', async () => {
    const registry = await startRegistry(200);
    await registries.pop()?.close();
    await expect(schemaRegistryCheck({ url: registry.base }).check()).rejects.toThrow();
  });
});

describe('kafkaCheck', () => {
  it('passes with brokers and a controller, and fails without either', async () => {
    expect(
      await kafkaCheck({ describeCluster: async () => ({ brokers: [{}], controller: 1 }) }).check(),
    ).toEqual({
      name: 'kafka',
      ok: true,
      detail: '1 broker(s)',
    });
    expect(
      (await kafkaCheck({ describeCluster: async () => ({ brokers: [], controller: 1 }) }).check()).ok,
    ).toBe(false);
    expect(
      (await kafkaCheck({ describeCluster: async () => ({ brokers: [{}], controller: null }) }).check()).ok,
    ).toBe(false);
  });
});

describe('grantCheck', () => {
  it('passes when the grant yields a token and never reports the token', async () => {
    const result = await grantCheck(new StaticTokenProvider('tok-very-secret'), 'default').check();
    expect(result).toEqual({ name: 'grant:default', ok: true });
  });

  it('throws the token provider error for a revoked grant', async () => {
    const revoked: TokenProvider = {
      accessToken: async () => {
        throw new FatalError(
          'AUTH_GRANT_REVOKED',
          'grant default was revoked: run `calls-connector auth login`',
        );
      },
      refreshAfterRejection: async () => '',
    };
    await expect(grantCheck(revoked).check()).rejects.toThrow(/auth login/);
  });

  it('gives the token provider a deadline of 5 s on its clock', async () => {
    const hanging: TokenProvider = {
      accessToken: (signal) =>
        new Promise<string>((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
        ),
      refreshAfterRejection: async () => '',
    };
    const clock = new ManualClock();
    const checked = grantCheck(hanging, 'default', clock).check();
    const outcome = checked.catch((e: unknown) => e);
    await clock.sleeping();
    clock.advance(5_000);
    expect(await outcome).toMatchObject({ name: 'TimeoutError' });
  });
});
