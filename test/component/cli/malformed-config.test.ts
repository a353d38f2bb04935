/**
 * Malformed configuration files, table-driven: each case is a file as an operator might write it (or a disk
 * might corrupt it), the exact message the CLI shows, and exit code 2 (invalid configuration), for both
 * `validate-config` and `run`. None reaches Kafka or the API: the file is refused before anything starts.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { main } from '../../../src/cli/main.js';
import { capture } from '../../support/capture.js';

const VALID = [
  'connector: {name: c}',
  'api: {baseUrl: "https://127.0.0.1:1"}',
  'auth: {staticToken: t}',
  'sources: [{locations: ["6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11"]}]',
  'kafka: {brokers: ["127.0.0.1:1"]}',
  'schemaRegistry: {url: "http://127.0.0.1:1"}',
].join('\n');

interface Case {
  name: string;
  content: string | Buffer;
  /** Lines the message must hold, exactly; `FILE` stands for the file's path. */
  message: string[];
}

const cases: Case[] = [
  {
    name: 'an empty file',
    content: '',
    message: [
      'calls-connector: FILE: the configuration is invalid:',
      '  - connector: required but missing',
      '  - api: required but missing',
      '  - sources: required but missing',
    ],
  },
  {
    name: 'a YAML syntax error',
    content: 'connector: {name: c\napi: [',
    message: [
      'calls-connector: the config file FILE is not valid YAML at line 2: Flow map in block collection must be sufficiently indented and end with a } at line 2, column 1:',
    ],
  },
  {
    name: 'a duplicate key',
    content: 'connector: {name: c}\nconnector: {name: d}\n',
    message: [
      'calls-connector: the config file FILE is not valid YAML at line 2: Map keys must be unique at line 2, column 1:',
    ],
  },
  {
    name: 'a list instead of a mapping',
    content: '- a\n- b\n',
    message: [
      'calls-connector: FILE: the configuration is invalid:',
      '  - (root): expected object, got a list',
    ],
  },
  {
    name: 'random bytes',
    content: Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919 + 13) % 256)),
    message: [
      'calls-connector: FILE: the configuration is invalid:',
      '  - (root): expected object, got a string',
    ],
  },
  {
    name: 'a misspelt section',
    content: VALID.replace('connector:', 'conector:'),
    message: [
      '  - connector: required but missing',
      '  - unknown key(s) `conector` (did you mean `connector`?); check the spelling against the configuration reference (docs/configuration.md)',
    ],
  },
  {
    name: 'a number written as a string',
    content: VALID.replace(
      'baseUrl: "https://127.0.0.1:1"',
      'baseUrl: "https://127.0.0.1:1", pageSize: "100"',
    ),
    message: ['  - api.pageSize: expected number, got a string'],
  },
  {
    name: 'a value out of range',
    content: VALID.replace('baseUrl: "https://127.0.0.1:1"', 'baseUrl: "https://127.0.0.1:1", pageSize: 500'),
    message: ['  - api.pageSize: Too big: expected number to be <=100'],
  },
  {
    name: 'a required key missing',
    content: VALID.replace('connector: {name: c}', 'connector: {}'),
    message: ['  - connector.name: required but missing'],
  },
  {
    name: 'a base URL that is not a URL',
    content: VALID.replace('https://127.0.0.1:1', 'not a url'),
    message: ['  - api.baseUrl: expected an absolute https:// URL, e.g. https://api.calls.example.com'],
  },
  {
    name: 'a location that is not a UUID',
    content: VALID.replace('6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11', 'not-a-uuid'),
    message: ['  - sources.0.locations.0: a location uid is a UUID'],
  },
  {
    name: 'a connector name with a slash',
    content: VALID.replace('{name: c}', '{name: "a/b"}'),
    message: ['  - connector.name: letters, digits, dot, dash and underscore only'],
  },
  {
    name: 'a name in invalid UTF-8',
    content: Buffer.concat([
      Buffer.from(VALID.replace('connector: {name: c}\n', '')),
      Buffer.from('\nconnector: {name: "'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}\n'),
    ]),
    message: ['  - connector.name: letters, digits, dot, dash and underscore only'],
  },
  {
    name: 'no credentials at all',
    content: VALID.replace('auth: {staticToken: t}', 'auth: {}'),
    message: ['  - oauth: configure `oauth` (production) or `auth.staticToken` (development)'],
  },
  {
    name: 'a reference to an unset environment variable',
    content: VALID.replace('auth: {staticToken: t}', 'auth: {staticToken: "${CHAOS_TEST_UNSET_VARIABLE}"}'),
    message: [
      'calls-connector: FILE: an environment variable the config refers to is not set: CHAOS_TEST_UNSET_VARIABLE',
      '  - CHAOS_TEST_UNSET_VARIABLE (used by `auth.staticToken`)',
    ],
  },
];

async function cli(...args: string[]): Promise<{ code: number; stderr: string }> {
  capture(process.stdout); // validate-config's output of a valid file would go there; none is expected
  const stderr = capture(process.stderr);
  const code = await main(['node', 'calls-connector', ...args]);
  return { code, stderr: stderr.text() };
}

describe('a malformed configuration file', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'malformed-config-'));
  });

  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  describe.each(['validate-config', 'run'])('given to %s', (command) => {
    it.each(cases)(
      'is refused with the exact message and exit 2: $name',
      async ({ name, content, message }) => {
        const file = join(dir, `${command}-${name.replace(/\W+/g, '-')}.yaml`);
        await writeFile(file, content);
        const { code, stderr } = await cli(command, '--config', file);
        expect(code).toBe(ExitCode.USAGE);
        for (const line of message) expect(stderr).toContain(line.replace('FILE', file));
        expect(stderr).not.toContain('internal error');
        expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
      },
    );
  });

  it('that does not exist is named with the flag to check, exit 2', async () => {
    const { code, stderr } = await cli('run', '--config', join(dir, 'nonexistent.yaml'));
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain(
      `calls-connector: cannot read the config file ${join(dir, 'nonexistent.yaml')}: no such file (check the --config path)`,
    );
  });
});
