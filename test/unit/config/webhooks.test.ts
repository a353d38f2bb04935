import { describe, expect, it } from 'vitest';
import { missingFromEnvironment } from '../../../src/config/environment-check.js';
import { parseConfig } from '../../../src/config/load.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const base = MINIMAL_CONFIG;

describe('the webhooks section', () => {
  it('is off by default, with Standard Webhooks, the sandbox payload shape and secrets from the environment', () => {
    const { webhooks } = parseConfig(base, {});
    expect(webhooks).toMatchObject({
      enabled: false,
      host: '127.0.0.1',
      port: 8465,
      path: '/webhooks/calls',
      bodyLimitBytes: 65536,
      allowUnsigned: false,
      signature: {
        scheme: 'standard-webhooks',
        secretEnv: ['CALLS_CONNECTOR_WEBHOOK_SECRET'],
        secretFiles: [],
        toleranceMs: 300_000,
      },
      payload: {
        eventPath: 'type',
        eventPrefix: 'call.',
        uidPath: 'data.uid',
        locationPath: 'data.locationUid',
      },
    });
    expect(webhooks.tls).toBeUndefined();
  });

  it('takes durations with units and header names in any case', () => {
    const { webhooks } = parseConfig(
      {
        ...base,
        webhooks: {
          signature: {
            toleranceMs: '2m',
            scheme: 'hmac',
            hmac: { header: 'X-Hub-Signature-256', prefix: 'sha256=' },
          },
        },
      },
      {},
    );
    expect(webhooks.signature.toleranceMs).toBe(120_000);
    expect(webhooks.signature.hmac.header).toBe('x-hub-signature-256');
  });

  it('refuses a secret written in the file, a timestamp.body scheme without its header, and a relative path', () => {
    expect(() => parseConfig({ ...base, webhooks: { signature: { secret: 'whsec_x' } } }, {})).toThrow(
      /webhooks\.signature/,
    );
    expect(() =>
      parseConfig({ ...base, webhooks: { signature: { hmac: { signedContent: 'timestamp.body' } } } }, {}),
    ).toThrow(/timestampHeader/);
    expect(() => parseConfig({ ...base, webhooks: { path: 'webhooks' } }, {})).toThrow(/webhooks\.path/);
  });

  it('makes validate-config name an enabled receiver without any secret, unless unsigned is allowed', async () => {
    const enabled = parseConfig({ ...base, webhooks: { enabled: true } }, {});
    expect(await missingFromEnvironment(enabled, {})).toEqual([
      expect.stringMatching(/^webhooks\.signature\.secretEnv: none of CALLS_CONNECTOR_WEBHOOK_SECRET is set/),
    ]);
    expect(
      await missingFromEnvironment(enabled, { CALLS_CONNECTOR_WEBHOOK_SECRET: `whsec_${'A'.repeat(32)}` }),
    ).toEqual([]);
    const unsigned = parseConfig({ ...base, webhooks: { enabled: true, allowUnsigned: true } }, {});
    expect(await missingFromEnvironment(unsigned, {})).toEqual([]);
  });

  it('makes validate-config name unreadable TLS and secret files of an enabled receiver', async () => {
    const config = parseConfig(
      {
        ...base,
        webhooks: {
          enabled: true,
          tls: { certFile: '/nonexistent/cert.pem', keyFile: '/nonexistent/key.pem' },
          signature: { secretFiles: ['/nonexistent/secret'] },
        },
      },
      {},
    );
    const problems = await missingFromEnvironment(config, {});
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'webhooks.tls.certFile',
      'webhooks.tls.keyFile',
      'webhooks.signature.secretFiles',
    ]);
  });

  it('refuses an enabled receiver whose scheme signs no timestamp, naming webhooks.replay.waiveProtection and why', () => {
    const github = {
      scheme: 'hmac',
      hmac: { header: 'X-Hub-Signature-256', prefix: 'sha256=', idHeader: 'X-GitHub-Delivery' },
    };
    const refused = (signature: object) => () =>
      parseConfig({ ...base, webhooks: { enabled: true, signature } }, {});
    expect(refused(github)).toThrow(
      /webhooks\.replay\.waiveProtection.*signs neither a timestamp nor an id.*replayed for ever/s,
    );
    expect(refused({ scheme: 'token' })).toThrow(/webhooks\.replay\.waiveProtection/);
    // An id the template signs, without a timestamp, still leaves a capture acceptable once evicted.
    expect(refused({ scheme: 'hmac', hmac: { idHeader: 'x-id', signedContent: '{id}.{body}' } })).toThrow(
      /signs an id but no timestamp/,
    );
    expect(() =>
      parseConfig(
        { ...base, webhooks: { enabled: true, signature: github, replay: { waiveProtection: true } } },
        {},
      ),
    ).not.toThrow();
    // Signed timestamps, and an unsigned development receiver, need no waiver.
    for (const signature of [
      {},
      { scheme: 'hmac', hmac: { timestampField: 't', prefix: 'v1=', signedContent: '{timestamp}.{body}' } },
      { scheme: 'hmac', hmac: { timestampHeader: 'x-ts', signedContent: 'v0:{header.x-ts}:{body}' } },
      { scheme: 'jwt' },
    ])
      expect(() => parseConfig({ ...base, webhooks: { enabled: true, signature } }, {})).not.toThrow();
    expect(() =>
      parseConfig({ ...base, webhooks: { enabled: true, allowUnsigned: true, signature: github } }, {}),
    ).not.toThrow();
  });

  it('refuses a signed content it cannot read, {url} without publicUrl, and a header JWT that signs no body', () => {
    const problem = (signature: object) => () =>
      parseConfig({ ...base, webhooks: { signature, replay: { waiveProtection: true } } }, {});
    expect(problem({ hmac: { signedContent: '{nonce}.{body}' } })).toThrow(/unknown placeholder \{nonce\}/);
    expect(problem({ hmac: { signedContent: '{body' } })).toThrow(/unmatched/);
    expect(problem({ hmac: { signedContent: '{timestamp}.{body}' } })).toThrow(
      /timestampHeader or timestampField/,
    );
    expect(problem({ scheme: 'hmac', hmac: { signedContent: '{url}' } })).toThrow(/publicUrl/);
    expect(problem({ hmac: { signedContent: '{id}.{body}' } })).toThrow(/set idHeader/);
    expect(problem({ publicUrl: 'https://hooks.example.com/path' })).toThrow(/origin/);
    expect(problem({ scheme: 'jwt', jwt: { location: 'header' } })).toThrow(/payloadHashClaim/);
  });
});
