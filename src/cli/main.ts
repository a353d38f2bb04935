#!/usr/bin/env node
/**
 * `calls-connector` entry point: parses the command line (commander) and dispatches to one command
 * module per file under ./commands. Commands return an exit code; errors reaching here are reported
 * without stack traces for expected failures (ConnectorError) and with one for programmer errors.
 */
// First of all: kafkajs's read_committed filter is replaced before any module loads kafkajs (see the module).
import '../kafka/client/kafkajs-read-committed-fix.js';
import { Command, CommanderError } from 'commander';
import { ConnectorError } from '../errors/index.js';
import { ConfigError } from '../config/load.js';
import { ExitCode } from '../errors/exit-codes.js';
import { packageVersion } from '../package-info.js';
import { registerCommands } from './commands/index.js';
import { reportError } from './error-report.js';
import { examples } from './help-text.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';
import { startTimer, systemClock } from '../time/clock.js';

export function buildProgram(): Command {
  const program = new Command('calls-connector')
    .description('Kafka source connector for the calls API: incremental, exactly-once, Avro, privacy-safe.')
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      'after',
      examples(
        'calls-connector demo',
        'calls-connector validate-config --config connector.yaml',
        'calls-connector run --config connector.yaml',
        'calls-connector <command> --help',
      ) +
        '\nExit codes: 0 success, 1 runtime failure, 2 invalid command line or configuration, 3 not ready / not found, 130 interrupted.\n',
    );
  registerCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`calls-connector: ${scrubSecretsInText(error.message)}\n`);
      return ExitCode.USAGE;
    }
    if (error instanceof ConnectorError) {
      const report = reportError(error);
      process.stderr.write(`${report.text}\n`);
      return report.exitCode;
    }
    process.stderr.write(
      `calls-connector: internal error: ${scrubSecretsInText(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`,
    );
    return ExitCode.FAILURE;
  }
}

// Run when executed directly (bin or `node dist/src/cli/main.js`), not when imported by tests.
const invokedDirectly =
  process.argv[1] !== undefined &&
  import.meta.url === new URL(`file://${(await import('node:fs')).realpathSync(process.argv[1])}`).href;
/** How long the process may outlive its command before it exits regardless. */
const EXIT_GRACE_MS = 5_000;

if (invokedDirectly) {
  process.exitCode = await main(process.argv);
  // When main returns, the command has closed everything it opened. A handle a library left behind (a kafkajs
  // consumer that restarts itself after a crash its own disconnect caused) must not keep the process running
  // after a SIGTERM: it exits anyway, naming what was still open. The timer does not itself keep it alive.
  startTimer(
    systemClock,
    EXIT_GRACE_MS,
    () => {
      const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'Timeout');
      process.stderr.write(
        `calls-connector: exiting ${EXIT_GRACE_MS / 1000} s after the command ended, though still open: ` +
          `${open.join(', ') || 'nothing named'}\n`,
      );
      process.exit();
    },
    { unref: true },
  );
}
