import { describe, expect, it } from 'vitest';
import {
  cliInvocation,
  nextSteps,
  runAloneSteps,
  shellWord,
  type NextStepsInput,
} from '../../../src/demo/next-steps.js';

function input(overrides: Partial<NextStepsInput> = {}): NextStepsInput {
  return {
    topic: 'calls-demo-1',
    registryUrl: 'http://127.0.0.1:18081',
    brokers: ['127.0.0.1:19092'],
    configFile: '/home/ann/demo/config.yaml',
    keyFile: '/home/ann/demo/secrets/token-store.key',
    cli: 'calls-connector',
    sandbox: {
      port: 40000,
      seed: 7,
      locations: 5,
      calls: 500,
      liveUpdatesPerSecond: 3,
      liveCreatesPerSecond: 5,
      clientFile: '/home/ann/demo/secrets/sandbox-client.json',
      certFile: '/home/ann/demo/sandbox-ca.pem',
      keyFile: '/home/ann/demo/secrets/sandbox-key.pem',
      locationsFile: '/home/ann/demo/sandbox-locations.json',
    },
    ...overrides,
  };
}

describe("the demo's next steps", () => {
  it('prints the CLI as npx runs it when the demo was started with npx, as a command otherwise', () => {
    expect(cliInvocation({ npm_command: 'exec' })).toBe('npx calls-connector');
    expect(cliInvocation({})).toBe('calls-connector');
    expect(runAloneSteps(input({ cli: 'npx calls-connector' }))[0]).toMatch(/^npx calls-connector sandbox /);
  });

  it('starts the sandbox again with the demo port, data, live changes, certificate and key, in the background', () => {
    const sandboxCommand = runAloneSteps(input()).slice(0, 3).join('\n');
    expect(sandboxCommand).toBe(
      [
        'calls-connector sandbox --port 40000 --seed 7 --locations 5 --calls 500 \\',
        '  --live-updates 3 --live-creates 5 --auto-approve \\',
        '  --cert /home/ann/demo/sandbox-ca.pem --key /home/ann/demo/secrets/sandbox-key.pem ' +
          '--client-file /home/ann/demo/secrets/sandbox-client.json --locations-out /home/ann/demo/sandbox-locations.json &',
      ].join('\n'),
    );
  });

  it('prints only lines a shell runs as they are: notes are comments', () => {
    const steps = runAloneSteps(input());
    expect(steps.slice(3)).toEqual([
      'calls-connector auth login --config /home/ann/demo/config.yaml',
      "calls-connector run --config /home/ann/demo/config.yaml     # the token store's key: /home/ann/demo/secrets/token-store.key",
    ]);
    const printed = nextSteps(input());
    for (const line of printed.split('\n').filter((l) => l.startsWith('  calls-connector')))
      expect(line).not.toMatch(/\s\(/);
    expect(printed).toContain(`  ${steps.join('\n  ')}`);
  });

  it('quotes paths a shell would split', () => {
    expect(shellWord('/home/ann/demo/config.yaml')).toBe('/home/ann/demo/config.yaml');
    expect(shellWord("/home/ann/my demo/it's.yaml")).toBe(`'/home/ann/my demo/it'\\''s.yaml'`);
    expect(runAloneSteps(input({ configFile: '/home/ann/my demo/config.yaml' }))[3]).toBe(
      "calls-connector auth login --config '/home/ann/my demo/config.yaml'",
    );
  });
});
