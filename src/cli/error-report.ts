/**
 * How the CLI reports an error that ends a command: one line naming the code and what went wrong, one
 * "what to do" line when the message itself does not already say it, and the exit code scripts rely on
 * (README "Exit codes"). Called by `main` only, for errors that reach the top of a command.
 *
 * The hints and exit codes live in the error-code catalogue (errors/codes.ts), not in the modules that
 * throw: they are about the operator's next step from the command line (which config key, which command),
 * and one table keeps them consistent.
 */
import { ERROR_CODES, type ConnectorError, type ErrorCodeEntry } from '../errors/index.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';

export interface ErrorReport {
  /** Lines for stderr, without a trailing newline, secrets scrubbed. */
  text: string;
  exitCode: number;
}

export function reportError(error: ConnectorError): ErrorReport {
  const entry: ErrorCodeEntry = ERROR_CODES[error.code];
  const lines = [`calls-connector: [${error.code}] ${error.message}`];
  if (entry.hint !== undefined) lines.push(`  what to do: ${entry.hint}`);
  return { text: scrubSecretsInText(lines.join('\n')), exitCode: entry.exit };
}
