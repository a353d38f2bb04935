import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../../../src/cli/main.js';
import { describeOutcome, sendSignal } from '../../../../src/cli/commands/signal.js';
import { ExitCode } from '../../../../src/errors/exit-codes.js';
import { capture } from '../../../support/capture.js';

const LOCATION = '00000000-0000-4000-8000-00000000000a';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('calls-connector signal', () => {
  it('refuses bad arguments with every problem before it reads the configuration or talks to Kafka', async () => {
    const stderr = capture(process.stderr);
    const code = await sendSignal('/nonexistent/config.yaml', 'pause', {
      location: 'shop-1',
      to: '2024-05-01T00:00:00Z',
    });
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr.text()).toBe(
      'calls-connector signal: location must be a location uid (UUID); got "shop-1"; ' +
        'to does not apply to pause (it takes no option but the location)\n',
    );
  });

  it('refuses an unknown kind, naming the kinds', async () => {
    const stderr = capture(process.stderr);
    expect(await sendSignal('/nonexistent/config.yaml', 'stop', { location: LOCATION })).toBe(ExitCode.USAGE);
    expect(stderr.text()).toContain('kind must be one of backfill, pause, resume, reset; got "stop"');
  });

  it('refuses a --timeout that is not a duration at the command line', async () => {
    const stderr = capture(process.stderr);
    const program = buildProgram();
    program.commands
      .find((c) => c.name() === 'signal')
      ?.configureOutput({ writeErr: (s) => process.stderr.write(s) });
    await expect(
      program.parseAsync([
        'node',
        'calls-connector',
        'signal',
        'pause',
        '-c',
        'x.yaml',
        '-l',
        LOCATION,
        '--wait',
        '--timeout',
        'soon',
      ]),
    ).rejects.toThrow(/expected a duration such as 30s, 5m or 1h/);
    expect(stderr.text()).toContain("option '--timeout <duration>' argument 'soon' is invalid");
  });

  it('prints an outcome as one line: state, time, instance, and a refusal with its code and reason', () => {
    expect(
      describeOutcome({ signalId: 's', state: 'done', at: '2024-06-01T00:00:01Z', instance: 'c@h' }),
    ).toBe('done 2024-06-01T00:00:01Z c@h');
    expect(
      describeOutcome({
        signalId: 's',
        state: 'refused',
        at: '2024-06-01T00:00:01Z',
        instance: 'c@h',
        reason: { code: 'LOCATION_NOT_CONFIGURED', message: 'no instance is configured with it' },
      }),
    ).toBe('refused 2024-06-01T00:00:01Z c@h LOCATION_NOT_CONFIGURED: no instance is configured with it');
  });
});
