/** A real logger (pino, JSON, every level) whose output a test reads back. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logging/logger.js';

export interface CapturingLogger {
  logger: Logger;
  /** Everything written so far, as written (serialized, redacted, scrubbed). */
  text: () => string;
  /** The lines written so far, parsed. */
  lines: () => Record<string, unknown>[];
}

export function capturingLogger(): CapturingLogger {
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return {
    logger: createLogger({ level: 'trace', format: 'json', destination }),
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
