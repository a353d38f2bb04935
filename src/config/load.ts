/**
 * Loads the connector configuration: a YAML file, `${ENV}` / `${ENV:-default}` interpolation (for secrets,
 * which never belong in the file itself), then validation against `configSchema`.
 *
 * Contract: returns a fully defaulted, validated config or throws ConfigError, whose message names every
 * offending key and what to do about it. Nothing is read from the network here.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { FatalError } from '../errors/index.js';
import { configSchema, type ConnectorConfig } from './schema.js';
import { knownKeysAt } from './config-keys.js';

export class ConfigError extends FatalError {
  readonly issues: readonly string[];
  constructor(message: string, issues: readonly string[] = [], cause?: unknown) {
    super('CONFIG_INVALID', issues.length > 0 ? `${message}\n  - ${issues.join('\n  - ')}` : message, {
      cause,
    });
    this.issues = issues;
  }
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${NAME}` and `${NAME:-default}` in every string of a parsed document.
 * References to unset variables without a default are one error naming every such variable and its keys,
 * so a first run learns everything it must set at once.
 */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, path = ''): unknown {
  const unset = new Map<string, string[]>();
  const result = substitute(value, env, path, unset);
  if (unset.size > 0) {
    const names = [...unset.keys()];
    throw new ConfigError(
      `${names.length === 1 ? 'an environment variable the config refers to is' : `${names.length} environment variables the config refers to are`} not set: ${names.join(', ')}`,
      [
        ...[...unset].map(([name, keys]) => `${name} (used by ${keys.map((k) => `\`${k}\``).join(', ')})`),
        `set ${names.length === 1 ? 'it' : 'them'}, or write \${NAME:-default} to give a default`,
      ],
    );
  }
  return result;
}

function substitute(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: string,
  unset: Map<string, string[]>,
): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined) return found;
      if (fallback !== undefined) return fallback;
      unset.set(name, [...(unset.get(name) ?? []), path || '(root)']);
      return match;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => substitute(item, env, `${path}[${i}]`, unset));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substitute(v, env, path ? `${path}.${k}` : k, unset)]),
    );
  }
  return value;
}

/** Turns zod issues into "key: problem" lines a person can act on. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(issue.path);
      const named = issue.keys.map((k) => {
        const near = nearest(k, known);
        return near === undefined ? `\`${k}\`` : `\`${k}\` (did you mean \`${near}\`?)`;
      });
      return `${key === '(root)' ? '' : `${key}: `}unknown key(s) ${named.join(', ')}; check the spelling against the configuration reference (docs/configuration.md)`;
    }
    if (issue.code === 'invalid_type') {
      // The input is reported (parseConfig asks zod for it) only to tell "missing" from "wrong type";
      // it is never printed: it could be a secret.
      return issue.input === undefined
        ? `${key}: required but missing`
        : `${key}: expected ${issue.expected}, got ${describeType(issue.input)}`;
    }
    return `${key}: ${issue.message}`;
  });
}

/** The known key closest to a misspelt one, when it is close enough to be a typo (edit distance <= 2 or a case slip). */
function nearest(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance =
      candidate.toLowerCase() === key.toLowerCase()
        ? 0
        : editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (best === undefined || distance < best.distance) best = { key: candidate, distance };
  }
  return best !== undefined && best.distance <= Math.min(2, Math.floor(key.length / 3))
    ? best.key
    : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[b.length]!;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value}`;
}

/** Validates an already parsed document (used by tests and by `validate-config`). */
export function parseConfig(document: unknown, env: NodeJS.ProcessEnv = process.env): ConnectorConfig {
  const interpolated = interpolateEnv(document ?? {}, env);
  const result = configSchema.safeParse(interpolated, { reportInput: true });
  if (!result.success) throw new ConfigError('the configuration is invalid:', describeIssues(result.error));
  return result.data;
}

/** What went wrong reading the file, and what to do about it. */
function readProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file (check the --config path)';
    case 'EISDIR':
      return 'it is a directory; pass the YAML file itself';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied (the connector user must be able to read it)';
    default:
      return code ?? String(error);
  }
}

export async function loadConfig(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ConnectorConfig> {
  return (await loadConfigFile(file, env)).config;
}

/**
 * The validated config and the document as the file wrote it (before `${ENV}` and defaults), for the checks
 * that depend on what a person wrote rather than on the effective value (ignoredSettings).
 */
export async function loadConfigFile(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ config: ConnectorConfig; document: unknown }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${file}: ${readProblem(error)}`, [], error);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError ? ` at line ${error.linePos?.[0]?.line ?? '?'}` : '';
    // yaml's message names the problem and quotes the offending line (no secret: ${ENV} is not expanded yet).
    const problem = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new ConfigError(`the config file ${file} is not valid YAML${where}: ${problem}`, [], error);
  }
  try {
    return { config: parseConfig(document, env), document };
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${file}: ${error.message}`, [], error.cause);
    throw error;
  }
}
