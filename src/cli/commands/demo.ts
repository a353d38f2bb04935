/**
 * `calls-connector demo`: the README's first command. See src/demo/demo.ts for what it runs.
 */
import type { Command } from 'commander';
import { wholeNumber } from '../option-parsers.js';
import { runDemo } from '../../demo/demo.js';
import { cliInvocation } from '../../demo/next-steps.js';
import { ExitCode } from '../../errors/exit-codes.js';
import { shutdownSignal } from './run.js';

export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'Run everything end to end on an embedded default: a local Kafka + schema registry, the sandbox API, the OAuth flow and the connector, with a live view.',
    )
    .option('--duration <seconds>', 'stop after this many seconds (default: until Ctrl-C)', wholeNumber())
    .option('--locations <n>', 'sandbox locations', wholeNumber(), 5)
    // 5 x 500 calls, each listed and enriched: caught up well within the first minute on a laptop.
    .option('--calls <n>', 'calls per location in the sandbox', wholeNumber(), 500)
    .option('--live-updates <r>', 'calls updated per second in the sandbox', wholeNumber(), 3)
    .option('--live-creates <r>', 'calls created per second in the sandbox', wholeNumber(), 5)
    .option(
      '--metrics-port <port>',
      'port of /metrics, /healthz, /readyz, /status (a free one is taken if it is busy)',
      wholeNumber(),
      9464,
    )
    .option(
      '--instances <n>',
      'connector instances sharing the locations (more than 1: distributed mode, one consumer group)',
      wholeNumber(1),
      1,
    )
    .option(
      '--dir <folder>',
      'where the demo keeps its config, encrypted tokens and logs',
      '.calls-connector/demo',
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ npx calls-connector demo',
        '  $ npx calls-connector demo --duration 30 --locations 20 --calls 500',
        '  $ npx calls-connector demo --instances 2   # two instances splitting the locations',
        '  $ KAFKA_BROKERS=localhost:9092 SCHEMA_REGISTRY_URL=http://localhost:8081 npx calls-connector demo',
      ].join('\n'),
    )
    .action(
      async (options: {
        duration?: number;
        locations: number;
        calls: number;
        liveUpdates: number;
        liveCreates: number;
        metricsPort: number;
        instances: number;
        dir: string;
      }) => {
        const stop = shutdownSignal(() => process.stdout.write('\nstopping ...\n'));
        try {
          const summary = await runDemo({
            ...(options.duration !== undefined && { durationSeconds: options.duration }),
            locations: options.locations,
            callsPerLocation: options.calls,
            liveUpdatesPerSecond: options.liveUpdates,
            liveCreatesPerSecond: options.liveCreates,
            metricsPort: options.metricsPort,
            instances: options.instances,
            workDir: options.dir,
            signal: stop.signal,
            out: process.stdout,
            cli: cliInvocation(process.env),
          });
          process.exitCode = summary.published > 0 ? ExitCode.OK : ExitCode.FAILURE;
        } finally {
          stop.dispose();
        }
      },
    );
}
