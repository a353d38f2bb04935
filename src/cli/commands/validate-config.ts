/**
 * `calls-connector validate-config --config FILE`: loads and validates a configuration without connecting to
 * anything, prints the effective configuration (defaults filled in, secrets redacted) and exits 0, or prints
 * every problem with its key and exits 2 (ExitCode.USAGE).
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { loadConfig } from '../../config/load.js';
import { redactSecrets } from '../../config/redact.js';

export function register(program: Command): void {
  program
    .command('validate-config')
    .description('Check a configuration file and print the effective configuration (secrets redacted).')
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .option('-q, --quiet', 'print nothing on success')
    .addHelpText(
      'after',
      '\nExamples:\n  $ calls-connector validate-config --config config/examples/connector.yaml\n',
    )
    .action(async (options: { config: string; quiet?: boolean }) => {
      const config = await loadConfig(options.config);
      if (!options.quiet) {
        process.stdout.write(`# ${options.config}: valid. Effective configuration (secrets redacted):\n`);
        process.stdout.write(stringify(redactSecrets(config)));
      }
    });
}
