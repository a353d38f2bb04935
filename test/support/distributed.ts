/**
 * Several connector processes of one name in distributed mode (CONTRACT-14), as the multi-process tests see
 * them: from the outside only, through each process's `/status` (the locations it owns and its assignment)
 * and `/metrics`, never through the connector's code. Also the ownership invariants those tests assert.
 */
import { startConnectorProcess, type ConnectorProcess } from './connector-process.js';

/** `/status` as distributed mode extends it: the owned locations (tasks) and the group assignment. */
export interface DistributedStatus {
  connector: { state: string };
  assignment: { partitions: number[]; generationId: number | null };
  tasks: Array<{
    id: string;
    state: string;
    offset: { since: string | null; cursor: string | null; watermark: string | null };
    last_success_at: string | null;
  }>;
}

export interface Instance extends ConnectorProcess {
  /** A short name for messages ("i1", "i2", ...). */
  name: string;
  /** SIGSTOPped (or killed): its endpoints do not answer, it is left out of ownership views. */
  paused: boolean;
  /** Base URL of its metrics server (/status, /metrics, /readyz), from its start log line. */
  url(): string | undefined;
}

const LISTENING = /"url":"(http:\/\/[^"]+)","msg":"metrics, \/healthz and \/readyz listening"/;

/** Starts `calls-connector run` on the config file; its metrics server must bind port 0 and log at info. */
export function startInstance(name: string, configFile: string, env?: NodeJS.ProcessEnv): Instance {
  const started = startConnectorProcess(configFile, env);
  return {
    ...started,
    name,
    paused: false,
    url: () => LISTENING.exec(started.output())?.[1],
  };
}

export function alive(instance: ConnectorProcess): boolean {
  return instance.child.exitCode === null && instance.child.signalCode === null;
}

/** GET a path of an instance; undefined when it does not answer within `timeoutMs` (stopped, starting). */
async function get(instance: Instance, path: string, timeoutMs = 1000): Promise<string | undefined> {
  const url = instance.url();
  if (url === undefined || !alive(instance) || instance.paused) return undefined;
  try {
    const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

/** The instance's /status; `assignment` is filled in (no partitions, generation null) while it starts. */
export async function statusOf(instance: Instance): Promise<DistributedStatus | undefined> {
  const body = await get(instance, '/status');
  if (body === undefined) return undefined;
  const status = JSON.parse(body) as Partial<DistributedStatus> & Omit<DistributedStatus, 'assignment'>;
  return { ...status, assignment: status.assignment ?? { partitions: [], generationId: null } };
}

/**
 * The value of one series in the instance's /metrics, named as the exposition writes it: `name` or
 * `name{label="value"}` (labels in the order prom-client writes them); undefined when absent.
 */
export async function metricOf(instance: Instance, series: string): Promise<number | undefined> {
  // A one-off read, not a polling loop: a busy machine may take seconds to render the exposition.
  const body = await get(instance, '/metrics', 10_000);
  const line = body?.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The statuses of the instances that answer now (live, not paused), by instance name. */
export async function statuses(instances: readonly Instance[]): Promise<Map<string, DistributedStatus>> {
  const answers = await Promise.all(instances.map(async (i) => [i.name, await statusOf(i)] as const));
  return new Map(answers.filter((a): a is [string, DistributedStatus] => a[1] !== undefined));
}

/** Location uid -> names of the instances whose /status lists it. */
export function ownersByLocation(views: ReadonlyMap<string, DistributedStatus>): Map<string, string[]> {
  const owners = new Map<string, string[]>();
  for (const [name, status] of views)
    for (const task of status.tasks) owners.set(task.id, [...(owners.get(task.id) ?? []), name]);
  return owners;
}

/**
 * What is wrong with a view of the group that should be settled: a location with no owner or several, one
 * listed that is not configured, an expected instance that did not answer or has no assignment, instances
 * on different generations, or one partition assigned twice. Empty: every location has exactly one owner.
 */
export function ownershipProblems(
  views: ReadonlyMap<string, DistributedStatus>,
  locations: readonly string[],
  expectedInstances: readonly string[],
): string[] {
  const problems: string[] = [];
  for (const name of expectedInstances) {
    const status = views.get(name);
    if (status === undefined) problems.push(`${name} did not answer`);
    else if (status.assignment.generationId === null) problems.push(`${name} has no assignment`);
  }
  const generations = new Set([...views.values()].map((s) => s.assignment.generationId));
  if (generations.size > 1) problems.push(`generations differ: ${[...generations].join(', ')}`);
  problems.push(...doubleAssignments(views));
  const owners = ownersByLocation(views);
  for (const location of locations) {
    const of = owners.get(location) ?? [];
    if (of.length !== 1) problems.push(`${location} owned by ${of.length} (${of.join(', ')})`);
  }
  for (const location of owners.keys())
    if (!locations.includes(location)) problems.push(`${location} is not configured`);
  return problems;
}

/**
 * A partition that two instances both hold in the same generation. With the eager rebalance protocol this
 * happens briefly by design: the previous holder learns of the new assignment when the new holder does, and
 * lets go once its page in flight ends (within poll.shutdownTimeoutMs), while the new holder's producer has
 * already fenced it. A zombie holds its partitions under an older generation, so it does not count here.
 */
export function doubleAssignments(views: ReadonlyMap<string, DistributedStatus>): string[] {
  const holder = new Map<string, string>();
  const problems: string[] = [];
  for (const [name, status] of views) {
    const { generationId, partitions } = status.assignment;
    if (generationId === null) continue;
    for (const partition of partitions) {
      const key = `${generationId}/${partition}`;
      const other = holder.get(key);
      if (other !== undefined)
        problems.push(`partition ${partition} held by ${other} and ${name} in generation ${generationId}`);
      holder.set(key, name);
    }
  }
  return problems;
}

export interface OwnershipWatch {
  samples: number;
  /** Double holdings seen (each counted once however many samples saw it). */
  overlaps: number;
  /** The longest a double holding lasted from its first to its last sample, ms. */
  longestOverlapMs: number;
  /** Double holdings that lasted longer than allowed: ownership that did not resolve. */
  persistent: string[];
}

/**
 * Samples the instances' statuses in the background until stopped. Every partition two instances hold in
 * the same generation must be let go by one of them within `maxOverlapMs` (the handover's bound, see
 * doubleAssignments): one that lasts longer is two owners for real, whenever the test happened to look.
 */
export function watchOwnership(
  instances: () => readonly Instance[],
  maxOverlapMs: number,
): { samples: () => number; stop: () => Promise<OwnershipWatch> } {
  const seen = new Map<string, { first: number; last: number }>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = Date.now();
      for (const overlap of doubleAssignments(await statuses(instances()))) {
        const span = seen.get(overlap) ?? { first: now, last: now };
        span.last = now;
        seen.set(overlap, span);
      }
      samples++;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    samples: () => samples,
    stop: async () => {
      running = false;
      await loop;
      const spans = [...seen].map(([overlap, { first, last }]) => ({ overlap, ms: last - first }));
      return {
        samples,
        overlaps: spans.length,
        longestOverlapMs: Math.max(0, ...spans.map((s) => s.ms)),
        persistent: spans.filter((s) => s.ms > maxOverlapMs).map((s) => `${s.overlap} for ${s.ms} ms`),
      };
    },
  };
}

/** The last lines of every instance's output, for the message of a failed wait. */
export function diagnostics(instances: readonly Instance[]): string {
  return instances
    .map((i) => {
      // A location polled each second logs a "traversal complete" line a second: those would push every line
      // that says why out of the tail.
      const lines = i.output().split('\n');
      const telling = lines.filter((line) => !line.includes('"msg":"traversal complete"'));
      const routine = lines.length - telling.length;
      return `--- ${i.name} (${routine} "traversal complete" lines left out) ---\n${telling.slice(-60).join('\n')}`;
    })
    .join('\n');
}

/**
 * Waits until exactly the instances named `names` answer, every location has exactly one owner among them
 * (ownershipProblems) and `also` holds for their statuses; returns those statuses. Fails with the last
 * problems seen and the instances' recent output.
 */
export async function awaitSettled(
  instances: readonly Instance[],
  locations: readonly string[],
  names: readonly string[],
  also: (views: Map<string, DistributedStatus>) => boolean = () => true,
  timeoutMs = 90_000,
): Promise<Map<string, DistributedStatus>> {
  const answering = () => instances.filter((i) => alive(i) && !i.paused);
  let problems: string[] = [];
  let views = new Map<string, DistributedStatus>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    views = await statuses(answering());
    problems = ownershipProblems(views, locations, names);
    const answered = [...views.keys()].sort().join();
    if (answered !== [...names].sort().join()) problems.push(`answering: ${answered}`);
    if (problems.length === 0 && also(views)) return views;
    if (Date.now() > deadline)
      throw new Error(
        `ownership did not settle on ${names.join(', ')} within ${timeoutMs} ms; last problems: ` +
          `${problems.join('; ') || `the extra condition`}\n${diagnostics(instances)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** True when each of `locations` completed a traversal, by whoever owns it now, at or after `since`. */
export function traversedSince(
  locations: readonly string[],
  since: number,
): (views: Map<string, DistributedStatus>) => boolean {
  return (views) => {
    const lastSuccess = new Map<string, number>();
    for (const status of views.values())
      for (const task of status.tasks)
        if (task.last_success_at !== null) lastSuccess.set(task.id, Date.parse(task.last_success_at));
    return locations.every((l) => (lastSuccess.get(l) ?? 0) >= since);
  };
}
