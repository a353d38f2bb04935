/**
 * `calls-connector run --config FILE`: the long-running connector.
 *
 * SIGTERM or SIGINT starts a graceful stop: no new page starts, the pages in flight commit or are abandoned
 * within `poll.shutdownTimeoutMs`, then Kafka, OAuth and HTTP resources are closed and the process exits 0.
 * A second signal exits at once (nothing uncommitted becomes visible: the open transaction is aborted by
 * the broker or by the next instance's fencing). Exits 1 if a fatal error stopped the connector or every
 * location, 2 on a configuration error.
 */
import type { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { redactSecrets } from '../../config/redact.js';
import { createLogger } from '../../logging/logger.js';
import { ConnectorRuntime } from '../../runtime/connector.js';
import { ExitCode } from '../exit-codes.js';

/** Aborts the returned signal on the first SIGTERM/SIGINT; exits on the second. */
export function shutdownSignal(onFirst: (signal: NodeJS.Signals) => void): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const controller = new AbortController();
  const handler = (received: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      process.stderr.write(`calls-connector: second ${received}, exiting now\n`);
      process.exit(ExitCode.INTERRUPTED);
    }
    onFirst(received);
    controller.abort(new Error(`received ${received}`));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    },
  };
}

export function register(program: Command): void {
  program
    .command('run')
    .description('Run the connector: keep the calls topic up to date for every configured location.')
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ calls-connector run --config /etc/calls-connector/config.yaml',
        '  $ CALLS_CONNECTOR_TOKEN_KEY=$(cat key.b64) calls-connector run -c config.yaml',
        '',
        'Exit codes: 0 stopped by SIGTERM/SIGINT, 1 fatal error, 2 invalid configuration.',
      ].join('\n'),
    )
    .action(async (options: { config: string }) => {
      const config = await loadConfig(options.config);
      const logger = createLogger({ level: config.logging.level, format: config.logging.format });
      logger.debug({ config: redactSecrets(config) }, 'configuration');
      const stop = shutdownSignal((received) => logger.info({ signal: received }, 'stopping'));
      let runtime: ConnectorRuntime | null = null;
      try {
        runtime = await ConnectorRuntime.start({ config, logger });
        await runtime.run(stop.signal);
        if (!stop.signal.aborted) {
          logger.error('every location is stopped by a fatal error; see the errors above');
          process.exitCode = ExitCode.FAILURE;
        } else {
          logger.info('stopped');
        }
      } finally {
        stop.dispose();
        await runtime?.close();
        logger.flush();
      }
    });
}
