/**
 * What a configuration reload would change, as a rule over two validated configurations (the running one and
 * the one just read): the locations and grants added, removed, changed and unchanged, and every key outside
 * `sources` whose value differs, with why it cannot change while running. Pure.
 *
 * Only `sources` can change while running: the locations and the grants that read them are the scheduler's to
 * start and stop. Every other key is read once at start by a part built from it (a client, a server, a
 * producer, the scheduler's settings), so a reload that changes one is refused as a whole (runtime/reload.ts) and
 * the running configuration kept. The keys are named, never their values: a value may be a secret.
 *
 * Also the configuration's fingerprint: a stable hash of its `sources`, the same for two instances that run the
 * same locations under the same grants whatever the order they are listed in.
 */
import { createHash } from 'node:crypto';
import type { ConnectorConfig } from './schema.js';

/** One configured location and how it is read. */
export interface LocationSource {
  location: string;
  grant: string;
  /** `sources[].startSince`; null when absent (from the beginning). */
  startSince: string | null;
}

/** A key that cannot change while running, and why. */
export interface FixedKeyChange {
  /** The dotted key (`kafka.brokers`, `poll.intervalMs`); arrays of values count as one key. */
  key: string;
  reason: string;
}

export interface ConfigurationDiff {
  locations: {
    /** In the new configuration only: to start (from their stored offset, else from the beginning). */
    added: LocationSource[];
    /** In the old only: to finish the page in flight, commit and stop. */
    removed: LocationSource[];
    /** In both, read under another grant or with another startSince: to stop, then start under the new. */
    changed: Array<{ from: LocationSource; to: LocationSource }>;
    /** In both, read as before: not touched. */
    unchanged: string[];
  };
  grants: { added: string[]; removed: string[]; unchanged: string[] };
  /** Keys outside `sources` that differ: any one refuses the reload. */
  fixed: FixedKeyChange[];
}

/**
 * Why each section cannot change while running: what reads it once at start. Checked longest prefix first, so
 * a key may have a reason of its own.
 */
const FIXED_REASONS: ReadonlyArray<readonly [prefix: string, reason: string]> = [
  [
    'connector.name',
    'names the offset keys, the consumer groups and the transactional ids: a new name is another connector',
  ],
  ['connector.mode', 'decides how instances share the locations; every instance must restart together'],
  ['api', 'the HTTP transport, its rate limiters and the API clients are built from it at start'],
  ['oauth', 'the OAuth client and the encrypted token store are opened with it at start'],
  ['auth', 'the token providers are built from it at start'],
  ['kafka', 'the Kafka clients, topics and transactional producers are made from it at start'],
  ['schemaRegistry', 'the registry client and the registered schema are set up at start'],
  ['poll', "the scheduler's settings are read when it is built"],
  ['lanes', "the scheduler's settings are read when it is built"],
  [
    'privacy',
    'what may leave with a call must not change under a page in flight; restart to apply it to every page alike',
  ],
  ['metrics', 'the metrics server and its labels are set up at start'],
  ['security', 'the consents are checked at start against the settings they accept'],
  ['logging', 'the logger is built at start'],
  ['webhooks', 'the receiver, its routes and its signature schemes are started with it'],
];

const GENERIC_REASON = 'read once at start';

export function reasonFixed(key: string): string {
  let best: readonly [string, string] | undefined;
  for (const entry of FIXED_REASONS) {
    const [prefix] = entry;
    if (
      (key === prefix || key.startsWith(`${prefix}.`)) &&
      (best === undefined || prefix.length > best[0].length)
    )
      best = entry;
  }
  return best?.[1] ?? GENERIC_REASON;
}

/** Every configured location, keyed by its uid in lower case (how the schema compares them). */
export function locationSources(config: Pick<ConnectorConfig, 'sources'>): Map<string, LocationSource> {
  const found = new Map<string, LocationSource>();
  for (const source of config.sources)
    for (const location of source.locations)
      found.set(location.toLowerCase(), {
        location,
        grant: source.grant,
        startSince: source.startSince ?? null,
      });
  return found;
}

export function configurationDiff(before: ConnectorConfig, after: ConnectorConfig): ConfigurationDiff {
  const old = locationSources(before);
  const now = locationSources(after);
  const locations: ConfigurationDiff['locations'] = { added: [], removed: [], changed: [], unchanged: [] };
  for (const [uid, to] of now) {
    const from = old.get(uid);
    if (from === undefined) locations.added.push(to);
    else if (from.grant !== to.grant || from.startSince !== to.startSince)
      locations.changed.push({ from, to });
    else locations.unchanged.push(to.location);
  }
  for (const [uid, from] of old) if (!now.has(uid)) locations.removed.push(from);
  const oldGrants = new Set(before.sources.map((s) => s.grant));
  const newGrants = new Set(after.sources.map((s) => s.grant));
  const grants = {
    added: [...newGrants].filter((g) => !oldGrants.has(g)),
    removed: [...oldGrants].filter((g) => !newGrants.has(g)),
    unchanged: [...newGrants].filter((g) => oldGrants.has(g)),
  };
  const { sources: _before, ...restBefore } = before;
  const { sources: _after, ...restAfter } = after;
  const fixed = differingKeys(restBefore, restAfter, '').map((key) => ({ key, reason: reasonFixed(key) }));
  return { locations, grants, fixed };
}

/** Whether applying the diff changes anything. */
export function changesAnything(diff: ConfigurationDiff): boolean {
  const { added, removed, changed } = diff.locations;
  return added.length + removed.length + changed.length + diff.fixed.length > 0;
}

/** The dotted keys whose values differ; a value that is not a plain object (an array, a string) is one key. */
function differingKeys(a: unknown, b: unknown, path: string): string[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) => differingKeys(a[key], b[key], path === '' ? key : `${path}.${key}`));
  }
  return sameValue(a, b) ? [] : [path];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) return differingKeys(a, b, '.').length === 0;
  return Object.is(a, b);
}

/**
 * A stable hash of the configuration's `sources`: sha-256 of the locations (uids in lower case, sorted) with
 * their grant and startSince, the first 16 hex digits. Listing order and the grouping into sources do not count.
 */
export function configurationFingerprint(config: Pick<ConnectorConfig, 'sources'>): string {
  const canonical = [...locationSources(config)]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([uid, source]) => [uid, source.grant, source.startSince]);
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex').slice(0, 16);
}
