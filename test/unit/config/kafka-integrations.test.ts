/** Config keys of issue 24 (what a Connect/Confluent user expects): compression, registry CA, OAUTHBEARER. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/load.js';
import { missingFromEnvironment } from '../../../src/config/environment-check.js';
import { thrown } from '../../support/auth/thrown.js';

const minimal = {
  connector: { name: 'calls' },
  api: { baseUrl: 'https://api.example.test' },
  auth: { staticToken: 't' },
  sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
  kafka: { brokers: ['127.0.0.1:9092'] },
  schemaRegistry: { url: 'http://127.0.0.1:8081' },
};

function configError(document: unknown): ConfigError {
  const error = thrown(() => parseConfig(document, {}));
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('kafka.compression', () => {
  it('defaults to none and takes the codec names as Kafka configs spell them, in any case', () => {
    expect(parseConfig(minimal, {}).kafka.compression).toBe('none');
    const zstd = parseConfig({ ...minimal, kafka: { ...minimal.kafka, compression: 'ZSTD' } }, {});
    expect(zstd.kafka.compression).toBe('zstd');
  });

  it('refuses a codec Kafka does not have, listing the ones it has', () => {
    const error = configError({ ...minimal, kafka: { ...minimal.kafka, compression: 'brotli' } });
    expect(error.message).toContain('kafka.compression');
    expect(error.message).toContain('none, gzip, snappy, lz4, zstd');
  });
});

describe('schemaRegistry.caFile', () => {
  it('is refused with an http:// registry, where no certificate is checked', () => {
    const schemaRegistry = { url: 'http://registry:8081', caFile: '/etc/ca.pem' };
    const error = configError({ ...minimal, schemaRegistry });
    expect(error.message).toContain('schemaRegistry.caFile applies to an https:// registry');
  });

  it('is accepted with an https:// registry', () => {
    const schemaRegistry = { url: 'https://registry:8081', caFile: '/etc/ca.pem' };
    expect(parseConfig({ ...minimal, schemaRegistry }, {}).schemaRegistry.caFile).toBe('/etc/ca.pem');
  });
});

describe('kafka.sasl with mechanism oauthbearer', () => {
  const oauth = {
    mechanism: 'OAUTHBEARER',
    tokenEndpointUrl: 'https://idp.example.com/oauth2/token',
    clientId: 'connector',
    clientSecret: 's',
  };
  const withSasl = (sasl: object, security = {}) => ({
    ...minimal,
    kafka: { ...minimal.kafka, ssl: true, sasl },
    security,
  });

  it('takes the token endpoint and client credentials, the mechanism in any case', () => {
    const sasl = parseConfig(withSasl({ ...oauth, scope: 'kafka' }), {}).kafka.sasl;
    expect(sasl).toMatchObject({ mechanism: 'oauthbearer', clientId: 'connector', scope: 'kafka' });
  });

  it('needs a client secret, from the environment or a file', () => {
    const { clientSecret: _omitted, ...noSecret } = oauth;
    expect(configError(withSasl(noSecret)).message).toContain('kafka.sasl.clientSecretFile');
    const fromFile = parseConfig(withSasl({ ...noSecret, clientSecretFile: '/run/secret' }), {});
    expect(fromFile.kafka.sasl).toMatchObject({ clientSecretFile: '/run/secret' });
  });

  it('refuses an http:// token endpoint off this machine unless security.allowInsecureKafka accepts it', () => {
    const remote = { ...oauth, tokenEndpointUrl: 'http://idp.example.com/token' };
    expect(configError(withSasl(remote)).message).toContain('kafka.sasl.tokenEndpointUrl');
    expect(() => parseConfig(withSasl(remote, { allowInsecureKafka: true }), {})).not.toThrow();
    expect(() =>
      parseConfig(withSasl({ ...oauth, tokenEndpointUrl: 'http://127.0.0.1:9/t' }), {}),
    ).not.toThrow();
  });

  it('keeps username/password mechanisms as they were, and refuses a mechanism it does not have', () => {
    const scram = parseConfig(withSasl({ mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' }), {});
    expect(scram.kafka.sasl).toEqual({ mechanism: 'scram-sha-256', username: 'u', password: 'p' });
    expect(configError(withSasl({ mechanism: 'gssapi' })).message).toContain('kafka.sasl.mechanism');
  });
});

describe('missingFromEnvironment', () => {
  it('names the registry CA file and the Kafka OAuth secret and CA files it cannot read', async () => {
    const config = parseConfig(
      {
        ...minimal,
        kafka: {
          ...minimal.kafka,
          ssl: true,
          sasl: {
            mechanism: 'oauthbearer',
            tokenEndpointUrl: 'https://idp.example.com/token',
            clientId: 'c',
            clientSecretFile: '/nonexistent/kafka-secret',
            caFile: '/nonexistent/idp-ca.pem',
          },
        },
        schemaRegistry: { url: 'https://registry:8081', caFile: '/nonexistent/registry-ca.pem' },
      },
      {},
    );
    const problems = await missingFromEnvironment(config, {});
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'schemaRegistry.caFile',
      'kafka.sasl.clientSecretFile',
      'kafka.sasl.caFile',
    ]);
  });
});

describe('kafka.sasl.extensions', () => {
  it('refuses what would break the SASL message: a reserved or non-letter name (named by its path), a control character', () => {
    const sasl = (extensions: object) => ({
      ...minimal,
      kafka: {
        ...minimal.kafka,
        ssl: true,
        sasl: {
          mechanism: 'oauthbearer',
          tokenEndpointUrl: 'https://idp.example.com/token',
          clientId: 'c',
          clientSecret: 's',
          extensions,
        },
      },
    });
    expect(parseConfig(sasl({ logicalCluster: 'lkc-1' }), {}).kafka.sasl).toMatchObject({
      extensions: { logicalCluster: 'lkc-1' },
    });
    expect(configError(sasl({ auth: 'x' })).message).toContain('reserved');
    expect(configError(sasl({ 'logical-cluster': 'x' })).message).toContain(
      'kafka.sasl.extensions.logical-cluster',
    );
    expect(configError(sasl({ pool: 'a\u0001b' })).message).toContain('printable ASCII');
  });
});
