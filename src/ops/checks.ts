/**
 * The readiness checks the connector wires into `/readyz`: Kafka, the schema registry, the OAuth grant
 * and the locations (how many are stopped, by code). Each depends on the smallest interface that answers the question, injected by the
 * `run` command, so this module opens no connection of its own (except the registry's HTTP probe).
 *
 * Details name what failed but never carry a secret (no tokens, no registry password, no URL userinfo).
 */
import { request, type Dispatcher } from 'undici';
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';
import type { NamedReadinessCheck } from './readiness.js';
import { systemClock, timeoutSignal, type Clock } from '../time/clock.js';

/** The part of a connected kafkajs `Admin` the Kafka check needs. */
export interface ClusterDescriber {
  describeCluster(): Promise<{ brokers: ReadonlyArray<unknown>; controller: number | null }>;
}

/** Ready when the cluster answers a metadata request and has a controller. */
export function kafkaCheck(admin: ClusterDescriber): NamedReadinessCheck {
  return {
    name: 'kafka',
    check: async () => {
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length === 0)
        return { name: 'kafka', ok: false, detail: 'no brokers in cluster metadata' };
      if (cluster.controller === null)
        return { name: 'kafka', ok: false, detail: 'cluster has no active controller' };
      return { name: 'kafka', ok: true, detail: `${cluster.brokers.length} broker(s)` };
    },
  };
}

export interface SchemaRegistryProbe {
  /** Confluent-compatible base URL, e.g. http://registry:8080/apis/ccompat/v7. */
  url: string;
  username?: string;
  password?: string;
  /** Verifies an https:// registry with schemaRegistry.caFile (createHttpsDispatcher); default: undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-probe timeout; the readiness timeout bounds it as well. Default 2,000 ms. */
  timeoutMs?: number;
  /** Where the timeout runs (default: the system clock). */
  clock?: Clock;
}

/**
 * `GET {url}/subjects` (the cheapest call every Confluent-compatible registry has): the status it answered and
 * the URL as it may be shown (userinfo never shown). Network failures are thrown as they come (undici errors).
 */
export async function probeSchemaRegistry(
  probe: SchemaRegistryProbe,
): Promise<{ shown: string; statusCode: number }> {
  const { shown, subjects, headers } = registryRequest(probe);
  const timeout = timeoutSignal(probe.clock ?? systemClock, probe.timeoutMs ?? 2_000);
  try {
    const response = await request(subjects, {
      method: 'GET',
      headers,
      signal: timeout.signal,
      ...(probe.dispatcher === undefined ? {} : { dispatcher: probe.dispatcher }),
    });
    await response.body.dump();
    return { shown, statusCode: response.statusCode };
  } finally {
    timeout.cancel();
  }
}

/** The registry URL as it may be shown in messages and /readyz: without userinfo, query or fragment. */
export function shownRegistryUrl(url: string): string {
  const base = new URL(url);
  return `${base.protocol}//${base.host}${base.pathname}`;
}

function registryRequest(probe: SchemaRegistryProbe): {
  shown: string;
  subjects: URL;
  headers: Record<string, string>;
} {
  const base = new URL(probe.url);
  const shown = shownRegistryUrl(probe.url);
  const headers: Record<string, string> = {
    accept: 'application/vnd.schemaregistry.v1+json, application/json',
  };
  // Credentials from the options, else from the URL's userinfo; sent as a header, never in the URL.
  const username = probe.username ?? decodeURIComponent(base.username);
  const password = probe.password ?? decodeURIComponent(base.password);
  if (username !== '') {
    headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  }
  const subjects = new URL(`${base.pathname.replace(/\/$/, '')}/subjects`, base);
  subjects.username = '';
  subjects.password = '';
  return { shown, subjects, headers };
}

/** Ready when `GET {url}/subjects` answers 200. */
export function schemaRegistryCheck(probe: SchemaRegistryProbe): NamedReadinessCheck {
  return {
    name: 'schema_registry',
    check: async () => {
      const { shown, statusCode } = await probeSchemaRegistry(probe);
      if (statusCode === 200) return { name: 'schema_registry', ok: true, detail: shown };
      return { name: 'schema_registry', ok: false, detail: `${shown} answered HTTP ${statusCode}` };
    },
  };
}

/** What the grant check asks of a grant: an access token (auth/token-provider.ts's TokenProvider fits). */
export interface GrantTokens {
  accessToken(signal?: AbortSignal): Promise<string>;
}

/**
 * Ready when the grant yields an access token. The token manager caches its token, so this costs a
 * network round trip only when a refresh is due anyway. The token itself is dropped, never reported.
 */
export function grantCheck(
  tokens: GrantTokens,
  grant = 'default',
  clock: Clock = systemClock,
): NamedReadinessCheck {
  const name = `grant:${grant}`;
  return {
    name,
    check: async () => {
      const timeout = timeoutSignal(clock, 5_000);
      try {
        await tokens.accessToken(timeout.signal);
      } finally {
        timeout.cancel();
      }
      return { name, ok: true };
    },
  };
}

/**
 * Reports the locations stopped by an error (detail: how many, by code, e.g. "1 of 3 locations stopped:
 * API_FORBIDDEN x1"). Ready while at least one location can work: a single stopped location is the
 * alert's business (CallsConnectorLocationsStopped), and failing readiness for it would also hold up a
 * rolling update whose new pods share the same API answers. Not ready when every location is stopped.
 */
export function locationsCheck(
  status: () => readonly Pick<LocationStatus, 'stoppedBy'>[],
): NamedReadinessCheck {
  const name = 'locations';
  return {
    name,
    check: () => {
      const locations = status();
      const byCode = new Map<string, number>();
      for (const { stoppedBy } of locations)
        if (stoppedBy !== null) byCode.set(stoppedBy, (byCode.get(stoppedBy) ?? 0) + 1);
      const stopped = [...byCode.values()].reduce((a, b) => a + b, 0);
      const codes = [...byCode].map(([code, count]) => `${code} x${count}`).join(', ');
      const detail =
        stopped === 0
          ? `${locations.length} location(s), none stopped`
          : `${stopped} of ${locations.length} location(s) stopped: ${codes}`;
      return Promise.resolve({ name, ok: stopped < locations.length || locations.length === 0, detail });
    },
  };
}

/** What the `running` check reads: what stopped the connector or ended its writer, and whether it can take over. */
export interface RunningState {
  /** The fatal error that stopped the connector for good (never a stand-down), else null. */
  stopped: { code: string; message: string } | null;
  /** The stand-down the current writer ended with (a newer instance writes), else null: this instance writes. */
  standDown: { code: string; message: string } | null;
  /** Single mode: a standby takes over once no newer instance is a member of the instances group. */
  takesOver: boolean;
}

/**
 * Ready while the connector runs and serves its purpose. A fatal error fails it. A single-mode standby (its writer
 * stood down because a newer instance writes) is ready: it is up, healthy and takes over on its own, so a rollout
 * (`kubectl rollout status`, `helm upgrade --wait`) completes with one; which instance writes is a signal of its
 * own (GET /status `role`, the writer gauge), never readiness. A stood-down instance that can never take over
 * (distributed mode: its partition went to another instance for good) is not ready.
 */
export function runningCheck(state: () => RunningState): NamedReadinessCheck {
  const name = 'running';
  return {
    name,
    check: () => {
      const { stopped, standDown, takesOver } = state();
      if (stopped !== null)
        return Promise.resolve({ name, ok: false, detail: `stopped: ${stopped.code}: ${stopped.message}` });
      if (standDown === null) return Promise.resolve({ name, ok: true, detail: 'writing' });
      return Promise.resolve(
        takesOver
          ? {
              name,
              ok: true,
              detail: `standing by (${standDown.code}): takes over once no newer instance is a member of the instances group`,
            }
          : { name, ok: false, detail: `stood down for good: ${standDown.code}: ${standDown.message}` },
      );
    },
  };
}

/**
 * Distributed mode: ready once this instance has joined the instances group and received an assignment.
 * An empty assignment (more instances than offsets-topic partitions) is ready: the instance is a standby.
 */
export function assignmentCheck(
  assignment: () => { partitions: readonly number[]; generationId: number | null } | null,
): NamedReadinessCheck {
  return {
    name: 'assignment',
    check: () => {
      const current = assignment();
      if (current === null)
        return Promise.resolve({
          name: 'assignment',
          ok: false,
          detail: 'not assigned yet: joining the instances group',
        });
      const partitions = current.partitions.length;
      return Promise.resolve({
        name: 'assignment',
        ok: true,
        detail:
          partitions === 0
            ? 'no partition assigned (more instances than offsets-topic partitions): standing by'
            : `${partitions} partition(s) of the offsets topic`,
      });
    },
  };
}
