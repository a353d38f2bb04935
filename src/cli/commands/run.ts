/**
 * `calls-connector run --config FILE`: the long-running connector.
 *
 * SIGTERM or SIGINT starts a graceful stop: no new page starts, the pages in flight commit or are abandoned
 * within `poll.shutdownTimeoutMs`, then Kafka, OAuth and HTTP resources are closed and the process exits 0.
 * A second signal exits at once (nothing uncommitted becomes visible: the open transaction is aborted by
 * the broker or by the next instance's fencing). Locations stopped by an error that can heal are retried
 * later and never end the process (see sync/scheduler/health-rule.ts). Exits 1 if a fatal error stopped the connector
 * or every location is stopped by an error only a restart can fix, 2 on a configuration error.
 */
import type { Command } from 'commander';
import { ignoredSettings } from '../../config/ignored-settings.js';
import { loadConfigFile } from '../../config/load.js';
import { insecureSettings } from '../../config/schema.js';
import { redactSecrets } from '../../config/redact.js';
import { createLogger } from '../../logging/logger.js';
import { FatalError } from '../../errors/index.js';
import { ConnectorRuntime } from '../../runtime/connector.js';
import type { LocationStatus } from '../../sync/scheduler/scheduled-location.js';
import { ExitCode } from '../../errors/exit-codes.js';

/**
 * One line per distinct error that stopped the locations, with how many locations it stopped and a few
 * of their uids: the messages say what to do (e.g. "run `calls-connector auth login`").
 */
export function describeStoppedLocations(statuses: readonly LocationStatus[]): string {
  const byError = new Map<string, string[]>();
  for (const status of statuses) {
    const error = status.lastError;
    const key =
      error === null ? '[UNKNOWN] stopped without a recorded error' : `[${error.code}] ${error.message}`;
    byError.set(key, [...(byError.get(key) ?? []), status.locationUid]);
  }
  const lines = [...byError].map(([error, uids]) => {
    const shown = uids.slice(0, 3).join(', ') + (uids.length > 3 ? `, and ${uids.length - 3} more` : '');
    return `  - ${error} (${uids.length} location${uids.length === 1 ? '' : 's'}: ${shown})`;
  });
  return `every location is stopped by an error only a restart can fix:\n${lines.join('\n')}`;
}

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
      const { config, document } = await loadConfigFile(options.config);
      const logger = createLogger({ level: config.logging.level, format: config.logging.format });
      logger.debug({ config: redactSecrets(config) }, 'configuration');
      for (const insecure of insecureSettings(config))
        logger.warn(
          { setting: insecure.path.join('.'), accepted: `security.${insecure.consent}` },
          `insecure setting accepted: ${insecure.problem}`,
        );
      for (const ignored of ignoredSettings(document, config))
        logger.warn(
          { setting: ignored.key, instead: ignored.instead },
          `setting ignored: ${ignored.problem}`,
        );
      const stop = shutdownSignal((received) => logger.info({ signal: received }, 'stopping'));
      // SIGHUP reloads the configuration once the runtime runs (runtime/reload.ts); during the start it must not
      // end the process (the default action), and the runtime reads the file again once started.
      const hangUpWhileStarting = (): void =>
        logger.info('SIGHUP during the start: the configuration is read again once the connector runs');
      process.on('SIGHUP', hangUpWhileStarting);
      let runtime: ConnectorRuntime | null = null;
      try {
        runtime = await ConnectorRuntime.start({
          config,
          logger,
          signal: stop.signal,
          configFile: options.config,
        });
        process.off('SIGHUP', hangUpWhileStarting);
        await runtime.run(stop.signal);
        if (!stop.signal.aborted) {
          const summary = describeStoppedLocations(runtime.status());
          logger.error({ summary }, 'every location is stopped by an error only a restart can fix');
          // Thrown so the last line on stderr says why and what to do (exit 1), not only "see the logs".
          throw new FatalError('ALL_LOCATIONS_STOPPED', summary);
        } else {
          logger.info('stopped');
        }
      } finally {
        process.off('SIGHUP', hangUpWhileStarting);
        stop.dispose();
        await runtime?.close();
        logger.flush();
      }
    });
}
