import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, interpolateEnv, loadConfig, parseConfig } from '../../../src/config/load.js';
import { configJsonSchema, type JsonSchemaNode } from '../../../src/config/config-keys.js';
import { insecureSettings } from '../../../src/config/schema.js';

const minimal = {
  connector: { name: 'calls' },
  api: { baseUrl: 'https://api.example.test' },
  auth: { staticToken: '${CALLS_TOKEN}' },
  sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
  kafka: { brokers: ['127.0.0.1:9092'] },
  schemaRegistry: { url: 'http://127.0.0.1:8081' },
};

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('interpolateEnv', () => {
  it('replaces ${NAME} with the variable and ${NAME:-default} with the default when unset', () => {
    expect(interpolateEnv({ a: 'x-${A}-y', b: ['${B:-fallback}'] }, { A: '1' })).toEqual({
      a: 'x-1-y',
      b: ['fallback'],
    });
  });

  it('names the key and the variable when a referenced variable is unset', () => {
    const error = errorOf(() => interpolateEnv({ oauth: { clientSecret: '${SECRET}' } }, {}));
    expect(error.message).toContain('oauth.clientSecret');
    expect(error.message).toContain('SECRET');
  });

  it('reports every unset variable at once, each with the keys that use it', () => {
    const error = errorOf(() =>
      interpolateEnv(
        {
          auth: { staticToken: '${TOKEN}' },
          kafka: { sasl: { username: '${USER}', password: '${PASS}' } },
          x: '${TOKEN}',
        },
        {},
      ),
    );
    expect(error.message).toContain(
      '3 environment variables the config refers to are not set: TOKEN, USER, PASS',
    );
    expect(error.issues).toContain('TOKEN (used by `auth.staticToken`, `x`)');
    expect(error.issues).toContain('PASS (used by `kafka.sasl.password`)');
  });
});

describe('parseConfig', () => {
  it('fills every default the README documents', () => {
    const config = parseConfig(minimal, { CALLS_TOKEN: 't' });
    expect(config.api.listPath).toBe('/v4/calls');
    expect(config.api.itemsField).toBe('data');
    expect(config.api.nextCursorField).toBe('metadata.nextCursor');
    expect(config.api.tokenHeader).toBe('Authorization');
    expect(config.api.pageSize).toBe(100);
    expect(config.kafka.topic).toBe('calls');
    expect(config.kafka.exactlyOnce).toBe(true);
    expect(config.privacy.customerPhoneNumber).toBe('redact-unless-public');
    expect(config.poll.boundaryCap).toBe(5000);
  });

  it('takes durations as milliseconds or as strings with a unit like 60s and 5m', () => {
    const config = parseConfig(
      {
        ...minimal,
        poll: { intervalMs: '5m', shutdownTimeoutMs: '60s' },
        api: { ...minimal.api, requestTimeoutMs: '1500ms', retry: { maxDelayMs: '${MAX_DELAY:-2000}' } },
        kafka: { ...minimal.kafka, transactionTimeoutMs: 90_000 },
      },
      { CALLS_TOKEN: 't' },
    );
    expect(config.poll.intervalMs).toBe(300_000);
    expect(config.poll.shutdownTimeoutMs).toBe(60_000);
    expect(config.api.requestTimeoutMs).toBe(1_500);
    expect(config.api.retry.maxDelayMs).toBe(2_000);
    expect(config.kafka.transactionTimeoutMs).toBe(90_000);
  });

  it('rejects a duration it cannot read, naming the key', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, poll: { intervalMs: 'soon' } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.message).toContain('poll.intervalMs');
  });

  it('accepts SASL mechanisms spelled in upper case, as Kafka configs write them', () => {
    const config = parseConfig(
      {
        ...minimal,
        kafka: {
          ...minimal.kafka,
          ssl: true,
          sasl: { mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' },
        },
      },
      { CALLS_TOKEN: 't' },
    );
    expect(config.kafka.sasl?.mechanism).toBe('scram-sha-512');
  });

  it('binds /metrics and /readyz to loopback unless metrics.host says otherwise', () => {
    expect(parseConfig(minimal, { CALLS_TOKEN: 't' }).metrics.host).toBe('127.0.0.1');
  });

  it('refuses SASL without TLS, unverified broker certificates and registry basic auth over http', () => {
    const sasl = { mechanism: 'scram-sha-512', username: 'u', password: 'p' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...minimal, kafka: { ...minimal.kafka, sasl } }, 'kafka.sasl:'],
      [{ ...minimal, kafka: { ...minimal.kafka, sasl, ssl: false } }, 'kafka.sasl:'],
      [
        { ...minimal, kafka: { ...minimal.kafka, ssl: { rejectUnauthorized: false } } },
        'kafka.ssl.rejectUnauthorized:',
      ],
      [
        { ...minimal, schemaRegistry: { url: 'http://registry:8081', username: 'u', password: 'p' } },
        'schemaRegistry.url:',
      ],
    ];
    for (const [document, key] of cases) {
      const error = errorOf(() => parseConfig(document, { CALLS_TOKEN: 't' }));
      expect(
        error.issues.find((issue) => issue.startsWith(key)),
        key,
      ).toMatch(/security\.allowInsecure/);
    }
    expect(() =>
      parseConfig({ ...minimal, kafka: { ...minimal.kafka, sasl, ssl: true } }, { CALLS_TOKEN: 't' }),
    ).not.toThrow();
    // Over loopback the registry credentials never leave the host (the demo, a local registry).
    for (const url of ['http://u:p@127.0.0.1:8081', 'http://localhost:8081'])
      expect(() =>
        parseConfig(
          { ...minimal, schemaRegistry: { url, username: 'u', password: 'p' } },
          { CALLS_TOKEN: 't' },
        ),
      ).not.toThrow();
  });

  it('accepts insecure settings only with their explicit security.allowInsecure… key, and lists them for the start-up warning', () => {
    const document = {
      ...minimal,
      kafka: { ...minimal.kafka, sasl: { mechanism: 'plain', username: 'u', password: 'p' } },
      schemaRegistry: { url: 'http://registry:8081', username: 'u', password: 'p' },
      security: { allowInsecureKafka: true, allowInsecureRegistry: true },
    };
    const config = parseConfig(document, { CALLS_TOKEN: 't' });
    expect(insecureSettings(config).map((s) => s.path.join('.'))).toEqual([
      'kafka.sasl',
      'schemaRegistry.url',
    ]);
  });

  it('rejects a page size the API does not allow and says which key', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, api: { ...minimal.api, pageSize: 500 } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.issues.some((issue) => issue.startsWith('api.pageSize:'))).toBe(true);
  });

  it('rejects a call path without its leading slash, not a path on the API host, and says which key', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, api: { ...minimal.api, callPath: 'v4/calls/{uid}' } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.issues.some((issue) => issue.startsWith('api.callPath:'))).toBe(true);
  });

  it('rejects unknown keys so typos do not silently fall back to defaults', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, kafka: { ...minimal.kafka, topik: 'x' } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.issues.join('\n')).toMatch(/kafka.*topik/);
  });

  it('refuses unknown keys in every section, nested ones included', () => {
    const lenient: string[] = [];
    const visit = (node: JsonSchemaNode, path: string): void => {
      if (node.properties !== undefined && node.additionalProperties !== false)
        lenient.push(path || '(root)');
      for (const [key, child] of Object.entries(node.properties ?? {}))
        visit(child, path ? `${path}.${key}` : key);
      for (const branch of node.anyOf ?? []) visit(branch, path);
      if (node.items) visit(node.items, `${path}[]`);
    };
    visit(configJsonSchema(), '');
    expect(lenient).toEqual([]);
  });

  it('suggests the key a typo was meant to be, at any depth', () => {
    const error = errorOf(() =>
      parseConfig(
        {
          ...minimal,
          kafka: { ...minimal.kafka, topik: 'x' },
          api: { ...minimal.api, retry: { maxAtempts: 3 } },
          sources: [{ locations: minimal.sources[0]!.locations, startsince: '2024-01-01T00:00:00Z' }],
          colour: 'red',
        },
        { CALLS_TOKEN: 't' },
      ),
    );
    expect(error.issues).toEqual(
      expect.arrayContaining([
        'kafka: unknown key(s) `topik` (did you mean `topic`?); check the spelling against the configuration reference (docs/configuration.md)',
        'api.retry: unknown key(s) `maxAtempts` (did you mean `maxAttempts`?); check the spelling against the configuration reference (docs/configuration.md)',
        'sources.0: unknown key(s) `startsince` (did you mean `startSince`?); check the spelling against the configuration reference (docs/configuration.md)',
        'unknown key(s) `colour`; check the spelling against the configuration reference (docs/configuration.md)',
      ]),
    );
  });

  it('rejects an http redirect uri before anything is attempted', () => {
    const config = {
      ...minimal,
      oauth: { clientId: 'c', clientSecret: 's', redirectUri: 'http://app.example.test/cb' },
    };
    const error = errorOf(() => parseConfig(config, { CALLS_TOKEN: 't' }));
    expect(error.issues.join('\n')).toContain('oauth.redirectUri');
  });

  it('requires some way to obtain a token', () => {
    const { auth: _auth, ...withoutAuth } = minimal;
    const error = errorOf(() => parseConfig(withoutAuth, {}));
    expect(error.message).toMatch(/oauth|staticToken/);
  });

  it('names the expected and the given type of a wrongly typed key instead of calling it missing', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, kafka: { ...minimal.kafka, exactlyOnce: 'yes' } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.issues).toContain('kafka.exactlyOnce: expected boolean, got a string');
  });

  it('says what a URL, a date-time and kafka.ssl should look like, with an example', () => {
    const error = errorOf(() =>
      parseConfig(
        {
          ...minimal,
          api: { baseUrl: 'api.example.com' },
          sources: [{ locations: minimal.sources[0]!.locations, startSince: 'yesterday' }],
          kafka: { ...minimal.kafka, ssl: 'yes' },
          schemaRegistry: { url: 'registry:8081' },
        },
        { CALLS_TOKEN: 't' },
      ),
    );
    expect(error.issues).toEqual([
      'api.baseUrl: expected an absolute https:// URL, e.g. https://api.calls.example.com',
      'sources.0.startSince: expected an RFC 3339 date-time with a zone, e.g. 2024-05-01T00:00:00Z',
      'kafka.ssl: expected true, false, or { caFile, certFile, keyFile, rejectUnauthorized }',
      'schemaRegistry.url: expected the http(s):// base of a Confluent-compatible API, e.g. http://registry:8081',
    ]);
  });

  it('never prints the value of a wrongly typed key (it could be a secret)', () => {
    const error = errorOf(() =>
      parseConfig(
        {
          ...minimal,
          kafka: { ...minimal.kafka, sasl: { mechanism: 'plain', username: 'u', password: 123456789 } },
        },
        { CALLS_TOKEN: 't' },
      ),
    );
    expect(error.message).toContain('kafka.sasl.password: expected string, got a number');
    expect(error.message).not.toContain('123456789');
  });

  it('takes a token store without a type as the documented default, a file store', () => {
    const config = parseConfig(
      {
        ...minimal,
        oauth: {
          clientId: 'c',
          clientSecret: 's',
          redirectUri: 'https://app.example.test/cb',
          store: { path: '/var/lib/tokens.enc' },
        },
      },
      { CALLS_TOKEN: 't' },
    );
    expect(config.oauth?.store).toEqual({ type: 'file', path: '/var/lib/tokens.enc' });
  });

  it('refuses a location listed twice, naming it, so validate-config catches it before a start', () => {
    const uid = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
    const error = errorOf(() =>
      parseConfig(
        { ...minimal, sources: [{ locations: [uid] }, { locations: [uid.toUpperCase()] }] },
        { CALLS_TOKEN: 't' },
      ),
    );
    expect(error.issues).toContain(
      `sources.1.locations.0: location ${uid.toUpperCase()} is listed twice in sources; list each location once`,
    );
  });

  it('never offers order=desc: there is no key for it', () => {
    const error = errorOf(() =>
      parseConfig({ ...minimal, api: { ...minimal.api, order: 'desc' } }, { CALLS_TOKEN: 't' }),
    );
    expect(error.issues.join('\n')).toContain('order');
  });
});

describe('loadConfig', () => {
  it('reads YAML, interpolates the environment and validates', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'calls-config-'));
    const file = join(dir, 'c.yaml');
    await writeFile(
      file,
      [
        'connector: { name: demo }',
        'api: { baseUrl: "https://api.example.test", pageSize: 50 }',
        'auth: { staticToken: "${TOKEN}" }',
        'sources: [{ locations: ["6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11"] }]',
        'kafka: { brokers: ["127.0.0.1:9092"] }',
        'schemaRegistry: { url: "http://127.0.0.1:8081" }',
      ].join('\n'),
    );
    const config = await loadConfig(file, { TOKEN: 'abc' });
    expect(config.api.pageSize).toBe(50);
    expect(config.auth.staticToken).toBe('abc');
  });

  it('points at the line of a YAML syntax error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'calls-config-'));
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'connector:\n  name: [unclosed\n');
    await expect(loadConfig(file, {})).rejects.toThrow(/not valid YAML at line \d+/);
  });

  it('says which file could not be read', async () => {
    await expect(loadConfig('/nonexistent/calls.yaml', {})).rejects.toThrow(
      /cannot read the config file \/nonexistent\/calls.yaml: no such file \(check the --config path\)/,
    );
  });

  it('says a directory was given instead of the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'calls-config-'));
    await expect(loadConfig(dir, {})).rejects.toThrow(/is a directory; pass the YAML file itself/);
  });

  it('says what is wrong with the YAML, not only where', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'calls-config-'));
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'connector: [\n');
    await expect(loadConfig(file, {})).rejects.toThrow(/not valid YAML at line \d+: \S+/);
  });
});
