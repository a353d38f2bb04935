/**
 * `calls-connector validate-config --config FILE`: loads and validates a configuration without connecting to
 * anything, prints the effective configuration (defaults filled in, secrets redacted) and exits 0, or prints
 * every problem with its key and exits 2 (ExitCode.USAGE). Files the config names and the token-store key
 * variable are checked too: warnings, or errors (exit 2) with --strict. Keys set but ignored (another key
 * applies in their place, ignoredSettings) are warnings, with or without --strict.
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { ignoredSettings } from '../../config/ignored-settings.js';
import { loadConfigFile } from '../../config/load.js';
import { redactSecrets } from '../../config/redact.js';
import { missingFromEnvironment } from '../../config/environment-check.js';
import { ExitCode } from '../../errors/exit-codes.js';
import { examples } from '../help-text.js';

export function register(program: Command): void {
  program
    .command('validate-config')
    .description('Check a configuration file and print the effective configuration (secrets redacted).')
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .option('-q, --quiet', 'print nothing on success')
    .option(
      '--strict',
      'also fail (exit 2) when a file the config names is unreadable or the token-store key variable is unset',
    )
    .addHelpText(
      'after',
      examples(
        'calls-connector validate-config --config config/examples/connector.yaml',
        'calls-connector validate-config --config /etc/calls-connector/config.yaml --strict --quiet',
      ),
    )
    .action(async (options: { config: string; quiet?: boolean; strict?: boolean }) => {
      const { config, document } = await loadConfigFile(options.config);
      // Valid but without effect: always a warning (the config is still what the connector would run).
      for (const ignored of ignoredSettings(document, config))
        process.stderr.write(`calls-connector: warning: ${ignored.problem}\n`);
      // Files and variables belong to the machine that runs the connector, which may not be this one:
      // a warning by default, an error with --strict (e.g. as an init container on the target).
      const missing = await missingFromEnvironment(config);
      for (const problem of missing)
        process.stderr.write(`calls-connector: ${options.strict ? 'error' : 'warning'}: ${problem}\n`);
      if (options.strict && missing.length > 0) {
        process.exitCode = ExitCode.USAGE;
        return;
      }
      if (!options.quiet) {
        process.stdout.write(`# ${options.config}: valid. Effective configuration (secrets redacted):\n`);
        process.stdout.write(stringify(redactSecrets(config)));
      }
    });
}
