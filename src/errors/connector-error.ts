/**
 * Errors are named by what happens next, not by where they came from:
 * - `retriable`: the same operation may succeed if tried again later (network, 5xx, 429, Kafka leader moves);
 * - `fatal`: stop the affected unit (one location, one grant, or the process at start-up); retrying is useless
 *   until a person changes something (config, grant, topic ACLs). The message says what to change;
 * - `skippable`: this one item cannot be processed; route it aside (dead-letter topic) and carry on.
 *
 * Every error carries a stable `code` (for logs, metrics labels and scripts) and the underlying `cause`.
 * Programmer errors (TypeError, RangeError, ...) are never wrapped as retriable: `dispositionOf()` treats
 * anything that is not a ConnectorError as fatal.
 *
 * Messages must never contain secrets (tokens, client secret): callers pass redacted context only.
 * Codes come from the catalogue (codes.ts).
 */
import type { ErrorClass, ErrorCode } from './codes.js';

export type ErrorDisposition = ErrorClass;

export interface ConnectorErrorOptions {
  cause?: unknown;
  /** Extra structured context for logs; must hold no secrets. */
  details?: Record<string, unknown>;
}

export class ConnectorError extends Error {
  readonly code: ErrorCode;
  readonly disposition: ErrorDisposition;
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    disposition: ErrorDisposition,
    message: string,
    options: ConnectorErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.disposition = disposition;
    this.details = options.details ?? {};
  }

  get retriable(): boolean {
    return this.disposition === 'retriable';
  }
}

export class RetriableError extends ConnectorError {
  constructor(code: ErrorCode, message: string, options?: ConnectorErrorOptions) {
    super(code, 'retriable', message, options);
  }
}

export class FatalError extends ConnectorError {
  constructor(code: ErrorCode, message: string, options?: ConnectorErrorOptions) {
    super(code, 'fatal', message, options);
  }
}

export class SkippableError extends ConnectorError {
  constructor(code: ErrorCode, message: string, options?: ConnectorErrorOptions) {
    super(code, 'skippable', message, options);
  }
}

/** What to do with any thrown value. Unknown errors (including programmer errors) are fatal, never retried. */
export function dispositionOf(error: unknown): ErrorDisposition {
  return error instanceof ConnectorError ? error.disposition : 'fatal';
}

/**
 * Whether a failure is a bug rather than an answer from the world: the built-in programmer error classes.
 * Libraries report network, broker and HTTP failures as their own Error subclasses (or plain Errors), never
 * as these. Such an error is passed on as it is (fatal for what it stopped), never retried as transient.
 */
export function isProgrammerError(error: unknown): error is Error {
  return (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError ||
    error instanceof SyntaxError
  );
}

/** Stable code of any thrown value, for logs and metric labels. */
export function codeOf(error: unknown): string {
  if (error instanceof ConnectorError) return error.code;
  if (error instanceof Error) return error.name === 'Error' ? 'INTERNAL' : error.name.toUpperCase();
  return 'INTERNAL';
}
