/**
 * The webhook faults (issue 40): kill -9 of the process that receives the deliveries, a broker restart while
 * deliveries keep coming (distributed mode writes each nudge to the nudge topic before its 202), floods of
 * forged and of replayed deliveries, and a sender that sends each delivery twice at once (the second copy
 * arrives while the first attempt is pending). Every request goes through the run's ingress
 * (webhook-ingress.ts), which records it and its answer: what each was owed is the judge's rule over the whole
 * run (webhook-judge.ts); each unit reports what it sent and what was answered.
 *
 * Background, all through the fault phase: the sandbox drops 20 % of the deliveries (they are never sent: their
 * changes wait for a poll) and forges, replays and re-identifies 2 % each.
 */
import { randomUUID } from 'node:crypto';
import type { PlannedFault } from '../schedule.js';
import { sleep, until } from '../processes.js';
import type { Random } from '../random.js';
import type { SandboxAdmin } from '../sandbox-admin.js';
import type { CapturedRequest, WebhookIngress } from '../webhook-ingress.js';
import type { DeliveryAttempt } from '../webhook-judge.js';
import { newWebhookSecret, signDelivery } from '../webhook-signing.js';
import type { FaultResult } from './outcome.js';
import { brokerKill, type StackFaultContext } from './stack-faults.js';
import { kill9, restart, victim } from './victims.js';

/** The sandbox's webhook faults in the background of the fault phase (its PUT /_sandbox/webhooks/faults). */
export const WEBHOOK_BACKGROUND = {
  rates: {
    drop: 0.2,
    duplicate: 0,
    delay: 0,
    reorder: 0,
    badSignature: 0.02,
    replay: 0.02,
    reidentify: 0.02,
  },
  delayMs: 500,
} as const;

/** Every webhook fault of the sandbox off (settling). */
export const NO_WEBHOOK_FAULTS = {
  rates: { drop: 0, duplicate: 0, delay: 0, reorder: 0, badSignature: 0, replay: 0, reidentify: 0 },
} as const;

export interface WebhookFaultContext extends StackFaultContext {
  ingress: WebhookIngress;
  admin: Pick<SandboxAdmin, 'call'>;
  /** Requests per flood. */
  floodSize: number;
}

/** The answers of the attempts received from `fromMs` on, as `202 ×5, 503 ×2`. */
function answers(attempts: readonly DeliveryAttempt[], fromMs: number, untilMs = Infinity): string {
  const byStatus = new Map<string, number>();
  for (const a of attempts)
    if (a.receivedAtMs >= fromMs && a.receivedAtMs <= untilMs) {
      const key = `${a.status}${a.outcome === null ? '' : ` ${a.outcome}`}`;
      byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
    }
  return byStatus.size === 0
    ? 'none'
    : [...byStatus]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, n]) => `${k} ×${n}`)
        .join(', ');
}

/**
 * kill -9 of the process that took the newest delivery (in single mode the writer), at a moment a delivery is
 * in flight through the ingress when one comes within 3 s; restarted after the fault's duration.
 */
export async function webhookReceiverKill(
  fault: PlannedFault,
  random: Random,
  context: WebhookFaultContext,
): Promise<FaultResult> {
  const { fleet, ingress } = context;
  const inFlight = await until(() => ingress.inFlight > 0, 3000, 5);
  const taker = ingress.lastTaker();
  // A slot's current process (a standby being retired is not restarted: its slot runs another).
  const hit = fleet.currentRunning().find((p) => p.name === taker) ?? victim(context, random);
  const start = Date.now();
  await kill9(fleet, hit);
  await sleep(fault.durationMs);
  const next = restart(fleet, hit);
  const end = Date.now();
  // What the sender met from the kill until the new process took a delivery (at most 30 s): refused
  // connections (502) and retries, the standby's or the starting process's 503s.
  const served = await until(
    () => ingress.attempts.some((a) => a.process === next.name && a.status === 202),
    30_000,
    50,
  );
  const seen = Date.now();
  return {
    end,
    detail:
      `kill -9 ${fleet.label(hit)}, the receiver of the newest delivery taken${inFlight ? ', a delivery in flight' : ''}; ` +
      `restarted after ${(fault.durationMs / 1000).toFixed(1)} s; ${served ? `${next.name} took a delivery ${((seen - start) / 1000).toFixed(1)} s after the kill` : `${next.name} took no delivery within 30 s`}; sender's attempts meanwhile: ${answers(
        ingress.attempts.filter((a) => a.origin === 'sender'),
        start,
        seen,
      )}`,
  };
}

/**
 * broker-kill's outage (stack-faults.ts: kill -9 of the broker, restarted on its data after the fault's
 * duration, a connector instance killed and restarted meanwhile half the time) begun while a delivery is in
 * flight, deliveries coming all along (the live changes go on): in distributed mode each nudge is written to the
 * nudge topic before its 202, so they are answered 503 until the broker is back, and the sender retries.
 */
export async function webhookBrokerRestart(
  fault: PlannedFault,
  random: Random,
  context: WebhookFaultContext,
): Promise<FaultResult> {
  const { ingress } = context;
  await until(() => ingress.inFlight > 0, 3000, 5);
  const start = Date.now();
  const outage = await brokerKill(fault, random, context);
  return {
    ...outage,
    detail: `${outage.detail}, deliveries coming all along; sender's attempts meanwhile: ${answers(
      ingress.attempts.filter((a) => a.origin === 'sender'),
      start,
      outage.end,
    )}`,
  };
}

/** Sends `requests` through the ingress, `concurrency` at a time; resolves with their attempts. */
async function flood(
  ingress: WebhookIngress,
  requests: readonly { request: CapturedRequest; to?: string }[],
  origin: 'forged-flood' | 'replay-flood',
  concurrency = 16,
): Promise<DeliveryAttempt[]> {
  const results: DeliveryAttempt[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < requests.length; i = next++) {
        const r = requests[i];
        if (r !== undefined) results.push(await ingress.forward(r.request, origin, r.to));
      }
    }),
  );
  return results;
}

/** `202 ×n, 401 ×m` of a flood's attempts. */
function tally(attempts: readonly DeliveryAttempt[]): string {
  return answers(attempts, 0);
}

/**
 * An attacker without the secret: requests for real calls and locations (taken from captured deliveries)
 * signed with a key of its own, unsigned, a captured signature over a changed body, and a captured signature
 * under a changed timestamp. Every one must be refused (the judge: forged answered 2xx is a violation).
 */
export async function webhookForgedFlood(
  _fault: PlannedFault,
  random: Random,
  context: WebhookFaultContext,
): Promise<FaultResult> {
  const { ingress, floodSize } = context;
  const wrongSecret = newWebhookSecret();
  const sources = ingress.captured.slice(-50);
  const requests: { request: CapturedRequest }[] = [];
  for (let i = 0; i < floodSize; i++) {
    const source = sources.length === 0 ? null : random.pick(sources).request;
    const body =
      source?.body ?? '{"type":"call.updated","data":{"uid":"00000000-0000-4000-a000-000000000000"}}';
    const now = Math.floor(Date.now() / 1000);
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const kind = i % 4;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (kind === 0) Object.assign(headers, signDelivery(wrongSecret, id, now, body));
    else if (kind === 1) Object.assign(headers, { 'webhook-id': id, 'webhook-timestamp': String(now) });
    // A captured signature over a changed body: another call named.
    const tampered = body.replace(/"uid":"[^"]+"/, `"uid":"${randomUUID()}"`);
    if (kind === 2 && source !== null) Object.assign(headers, pick(source.headers));
    if (kind === 3 && source !== null)
      Object.assign(headers, pick(source.headers), { 'webhook-timestamp': String(now + random.int(1, 60)) });
    requests.push({
      request: { path: source?.path ?? '/webhooks/calls', headers, body: kind === 2 ? tampered : body },
    });
  }
  const sent = await flood(ingress, requests, 'forged-flood');
  return {
    end: Date.now(),
    detail: `${sent.length} forged requests (a key of its own, unsigned, a captured signature over a changed body or under a changed timestamp): ${tally(sent)}`,
  };
}

/** The Standard Webhooks headers of a captured request. */
function pick(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    if (headers[name] !== undefined) out[name] = headers[name];
  return out;
}

/**
 * An attacker on the wire: genuine deliveries already taken, resent as captured to the process that took
 * them (must be answered 200 `replayed`, never 202), to another running process (distributed mode: another
 * instance), through the ingress' routing, and under a fresh id (the id is signed: must be refused). Replays
 * taken by a process other than the one that took the delivery are judged apart (webhook-judge.ts): in
 * distributed mode the instances share their replay windows over the nudge topic, so one taken past the
 * judge's bound is a violation; one taken by a process started since is counted.
 */
export async function webhookReplayFlood(
  _fault: PlannedFault,
  random: Random,
  context: WebhookFaultContext,
): Promise<FaultResult> {
  const { ingress, floodSize, fleet } = context;
  const sources = ingress.captured.slice(-100);
  if (sources.length === 0) return { end: Date.now(), detail: 'no delivery taken yet: nothing to replay' };
  const running = new Set(fleet.all.filter((p) => p.running).map((p) => p.name));
  const requests: { request: CapturedRequest; to?: string }[] = [];
  for (let i = 0; i < floodSize; i++) {
    const source = random.pick(sources);
    const kind = i % 4;
    const others = [...running].filter((name) => name !== source.process);
    if (kind === 0 && running.has(source.process))
      requests.push({ request: source.request, to: source.process });
    else if (kind === 1 && others.length > 0)
      requests.push({ request: source.request, to: random.pick(others) });
    else if (kind === 3)
      requests.push({
        request: {
          ...source.request,
          headers: { ...source.request.headers, 'webhook-id': `msg_${randomUUID().replaceAll('-', '')}` },
        },
      });
    else requests.push({ request: source.request });
  }
  const sent = await flood(ingress, requests, 'replay-flood');
  return {
    end: Date.now(),
    detail: `${sent.length} replays of ${sources.length} captured deliveries (to the process that took them, to another, through the routing, under a fresh id): ${tally(sent)}`,
  };
}

/**
 * A sender that sends each delivery twice at once for the fault's duration (the sandbox's `duplicate` at
 * 100 %): the second copy reaches the same process (the ingress routes by delivery id) while the first
 * attempt is pending there (distributed mode: its nudge being written to the nudge topic). The judge holds each
 * id taken once per process, and no copy told "replayed" unless the first was taken.
 */
export async function webhookRetryPending(
  fault: PlannedFault,
  _random: Random,
  context: WebhookFaultContext,
): Promise<FaultResult> {
  const { admin, ingress } = context;
  const start = Date.now();
  await admin.call('PUT', 'webhooks/faults', { rates: { ...WEBHOOK_BACKGROUND.rates, duplicate: 1 } });
  try {
    await sleep(fault.durationMs);
  } finally {
    await admin.call('PUT', 'webhooks/faults', { rates: WEBHOOK_BACKGROUND.rates });
  }
  const end = Date.now();
  return {
    end,
    detail: `every delivery sent twice at once for ${(fault.durationMs / 1000).toFixed(1)} s; sender's attempts meanwhile: ${answers(
      ingress.attempts.filter((a) => a.origin === 'sender'),
      start,
      end,
    )}`,
  };
}
