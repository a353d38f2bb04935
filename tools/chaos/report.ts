/** The report of a chaos run: reports/chaos.json (everything) and reports/chaos.md (for people). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closingLine } from './processes.js';
import type { FaultFreshness } from './freshness.js';
import type { RunSummary } from './summary.js';

export interface Recovery {
  kind: string;
  count: number;
  recovered: number;
  medianMs: number | null;
  maxMs: number | null;
}

/** Per fault kind: the median and the maximum recovery time (no progress within the cap left out of both). */
export function recoveries(summary: RunSummary): Recovery[] {
  return perKind(summary.faults.map((f) => [f.kind, f.recoveryMs]));
}

/**
 * Distributed mode: per process fault kind, the time from the fault's start to ownership whole again (every
 * partition and location with exactly one owner among the instances); faults without a measure left out.
 */
export function handovers(summary: RunSummary): Recovery[] {
  return perKind(
    summary.faults.flatMap((f) => (f.handoverMs === undefined ? [] : [[f.kind, f.handoverMs] as const])),
  );
}

function perKind(measures: readonly (readonly [string, number | null])[]): Recovery[] {
  const byKind = new Map<string, (number | null)[]>();
  for (const [kind, ms] of measures) byKind.set(kind, [...(byKind.get(kind) ?? []), ms]);
  return [...byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, values]) => {
      const times = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
      const median =
        times.length === 0
          ? null
          : times.length % 2 === 1
            ? (times[(times.length - 1) / 2] ?? null)
            : ((times[times.length / 2 - 1] ?? 0) + (times[times.length / 2] ?? 0)) / 2;
      return {
        kind,
        count: values.length,
        recovered: times.length,
        medianMs: median,
        maxMs: times.at(-1) ?? null,
      };
    });
}

const seconds = (ms: number | null): string => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);

export function markdown(summary: RunSummary, command: string): string {
  const c = summary.check;
  const lines = [
    `# Chaos run: ${summary.violations.length === 0 ? 'PASSED' : 'FAILED'}`,
    '',
    `Reproduce: \`${command}\` (seed ${summary.seed}, profile ${summary.profile} with a ` +
      `${Math.round(summary.faultPhaseMs / 60_000)}-minute fault phase, ` +
      `${summary.exactlyOnce ? 'exactly-once' : 'at-least-once'}, ${summary.mode} mode with ` +
      `${summary.instances} instance${summary.instances > 1 ? 's' : ''}). Duration ${seconds(summary.durationMs)}.`,
    '',
    '## Data',
    '',
    `- ${summary.locations} locations, ${summary.initialCalls} listable calls at the start; ` +
      `${summary.liveUpdates} live updates and ${summary.liveCreates} live creations during the run.`,
    '',
    '## Faults and recovery',
    '',
    'Recovery: from the end of the fault (process restarted, broker or registry answering, API window closed) to ' +
      'the next page committed to Kafka.',
    '',
    '| Fault | Injected | Recovered | Median recovery | Max recovery |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...recoveries(summary).map(
      (r) => `| ${r.kind} | ${r.count} | ${r.recovered} | ${seconds(r.medianMs)} | ${seconds(r.maxMs)} |`,
    ),
    '',
    ...handoverLines(summary),
    `- Connector processes started: ${summary.connectorStarts} (restarts survived: ${Math.max(0, summary.connectorStarts - 1)}); ` +
      `kills inside an open transaction: ${summary.mode === 'distributed' ? 'not measured (the other instances keep writing)' : summary.killsInsideTransaction}; kills between a token refresh and its storage: ` +
      `${summary.killsBetweenRefreshAndStorage}.`,
    `- Unexpected exits (restarted by the driver as a supervisor would): ${summary.unexpectedExits.length}; crash loops: ${summary.crashLoops}; ` +
      `operator logins after a lost grant: ${Math.max(0, summary.operatorLogins - 2)} (two grants, each logged in at the start).`,
    ...summary.rollingRestartOutcomes.map((o) => `- Rolling restart: ${o}.`),
    ...summary.fencedInstanceOutcomes.map((o) => `- SIGSTOP/SIGCONT: ${o}.`),
    ...summary.faultChecks.map((o) => `- ${o[0]?.toUpperCase() ?? ''}${o.slice(1)}.`),
    `- Settled: ${summary.settled ? 'yes' : 'NO'} (${seconds(summary.settleMs)} after the faults stopped); final SIGTERM: ${summary.finalExit || '—'}.`,
    `- Peak RSS of a connector process: ${mib(summary.peakRssBytes)}.`,
    ...(summary.mode === 'distributed' ? [`- Ownership at the end: ${summary.finalOwnership || '—'}.`] : []),
    '',
    ...instanceLines(summary),
    ...freshnessLines(summary),
    ...webhookLines(summary),
    '## Checker',
    '',
  ];
  if (c === null) lines.push('The checker did not run.');
  else
    lines.push(
      '| Check | Result |',
      '| --- | ---: |',
      `| partitions the witness did not read to their end | ${c.unreadPartitions.count} |`,
      `| records checked (read_committed, librdkafka) | ${c.recordsChecked} |`,
      `| distinct versions published | ${c.versionsPublished} |`,
      `| current versions in the truth | ${c.currentVersions} |`,
      `| lost | ${c.lost.count} |`,
      `| duplicated (uid, updatedAt; a backfill's re-read apart) | ${c.duplicated.count} |`,
      `| re-read by backfill signals / current versions of their ranges missed | ${c.reReads} / ${c.reReadMissing.count} |`,
      `| versions going backwards per uid (offset order) | ${c.regressions.count} |`,
      `| unlisted (third-party, unrepresentable) published | ${c.unlisted.count} |`,
      `| versions the sandbox never held | ${c.unknownVersion.count} |`,
      `| customer numbers leaked | ${c.privacyLeaks.count} |`,
      `| enriched fields unequal to the truth | ${c.enrichmentMismatches.count} |`,
      `| published unenriched (redacted) | ${c.unenriched} |`,
      `| dead letters | ${c.deadLetters} |`,
      `| offsets inconsistent | ${c.offsetViolations.count} |`,
      `| secrets in ${c.logLinesScanned} log lines | ${c.secretLeaks.count} |`,
      '',
      `Witness (tools/chaos/witness/read_topic.py, librdkafka): ${Object.entries(c.witness)
        .map(([topic, read]) => `${topic}: ${read}`)
        .join('; ')}.`,
    );
  if (summary.hostile.length > 0) {
    lines.push(
      '',
      '## Hostile API bodies',
      '',
      'One connector process per case, served the body for a few seconds, then SIGTERM.',
      '',
      '| Body | Result | Exit | Codes logged | Dead letters | Peak RSS |',
      '| --- | --- | --- | --- | ---: | ---: |',
      ...summary.hostile.map(
        (h) =>
          `| ${h.name} | ${h.passed ? 'ok' : `FAILED${h.detail ? ` (${h.detail})` : ''}`} | ${h.exit} | ${h.codes.join(', ') || '—'} | ${h.deadLetters} | ${(h.peakRssBytes / 1024 / 1024).toFixed(0)} MiB |`,
      ),
    );
  }
  lines.push('', '## Violations', '');
  if (summary.violations.length === 0) lines.push('None.');
  else lines.push(...summary.violations.map((v) => `- ${v.split('\n')[0]}`));
  if (summary.unexpectedExits.length > 0) {
    lines.push('', '## Unexpected exits', '');
    for (const e of summary.unexpectedExits.slice(0, 20)) {
      lines.push(`- ${e.instance}: code ${e.code}, ${e.signal ?? 'no signal'}: \`${closingLine(e.tail)}\``);
    }
  }
  return `${lines.join('\n')}\n`;
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/**
 * Per fault, how long the changes made from its start to the next fault's waited to be in Kafka, against the
 * rule's bound (freshness.ts): the fault's recovery plus two effective intervals.
 */
export function freshnessLines(summary: Pick<RunSummary, 'freshness' | 'lateChanges'>): string[] {
  if (summary.freshness.length === 0) return [];
  return [
    '## Freshness',
    '',
    "From a change's making (the driver's clock) to its record's Kafka timestamp, for the changes made from " +
      "each fault's start to the next one's. Late: past max(made, end + recovery, start + handover) + the kind's " +
      'own allowance + 2 × the effective interval (the configured one, or the longer one the API budget implies; ' +
      "the connector's gauge beside it), or past a later fault's by the same rule when it starts before that, or " +
      "an earlier fault's still disrupting at the change's making; one step only (docs/chaos.md).",
    '',
    ...freshnessTable(summary.freshness),
    '',
    ...(summary.lateChanges.length === 0
      ? []
      : [
          "Late changes reported, not violations (a fault's late changes when the run was not asked to hold freshness, `--hold-freshness`; the webhook changes' p99 outside the faults over its goal always, a goal `npm run bench -- webhooks` holds):",
          '',
          ...summary.lateChanges.map((late) => `- ${late}`),
          '',
        ]),
  ];
}

/** The freshness table (Markdown), one row per fault: the report's and `rejudge.ts`'s. */
export function freshnessTable(freshness: readonly FaultFreshness[]): string[] {
  const s = (ms: number | null): string => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
  return [
    "| Fault | At | Changes | p50 | p99 | Max | Largest bound | Effective interval (connector's gauge, max) | Late |",
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...freshness.map(
      (f) =>
        `| ${f.kind} | +${f.atS} s | ${f.changes} | ${s(f.p50Ms)} | ${s(f.p99Ms)} | ${s(f.maxMs)} | ${s(f.boundMs)} | ` +
        `${s(f.effectiveIntervalMs)} (${s(f.gaugeMaxMs)}) | ${f.late === 0 ? '0' : `**${f.late}**`} |`,
    ),
  ];
}

/**
 * The deliveries through the ingress and the judge's counts (webhook-judge.ts), and each change's route to
 * Kafka (webhook-attribution.ts), all changes and those made outside the fault windows.
 */
export function webhookLines(summary: Pick<RunSummary, 'webhooks'>): string[] {
  const w = summary.webhooks;
  if (w === null) return [];
  const s = (ms: number | null): string => (ms === null ? '—' : `${(ms / 1000).toFixed(2)} s`);
  const { counts, attribution: a } = w;
  const routes = ['nudge', 'before-delivery', 'other-nudge', 'reconciliation', 'unpublished'] as const;
  const row = (label: string, r: Record<(typeof routes)[number], number>): string =>
    `| ${label} | ${routes.map((k) => r[k]).join(' | ')} |`;
  const statuses = Object.entries(counts.senderStatuses)
    .sort(([x], [y]) => x.localeCompare(y))
    .map(([status, n]) => `${status} ×${n}`)
    .join(', ');
  return [
    '## Webhooks',
    '',
    `The sandbox sends a signed delivery (Standard Webhooks) per change through the run's ingress to a running ` +
      `instance's receiver; 20 % are dropped in the background, 2 % each forged, replayed and re-identified. ` +
      `Reconciliation every ${w.reconcileIntervalMs / 1000} s. Route to Kafka (docs/chaos.md): \`nudge\` in Kafka within ` +
      `${w.nudgeBoundMs / 1000} s of its own delivery being taken (202), \`before-delivery\` in Kafka before it was, ` +
      `\`other-nudge\` within that bound of another change of its location being taken, \`reconciliation\` none of these.`,
    '',
    `- Requests: ${counts.requests.sender} from the sender (${statuses || 'none'}), ${counts.requests['forged-flood']} forged flood, ` +
      `${counts.requests['replay-flood']} replay flood; delivery ids sent ${counts.deliveryIds}, taken ${counts.deliveryIdsTaken}.`,
    `- Forged (signature not the run's secret's): ${counts.forged.sent} sent, ${counts.forged.refused} refused 401, **${counts.forged.accepted} accepted**.`,
    `- Replays of a taken delivery to the process that took it: ${counts.replays.sameProcess}, **${counts.replays.takenAgainSameProcess} taken again**; ` +
      `to a process that had not taken it (another instance, or one started since): ${counts.replays.otherProcess}, ${counts.replays.takenByOther} taken` +
      (w.sharedReplayBoundMs === null
        ? ' (single mode: a process started since knows nothing of the deliveries taken before).'
        : `, **${counts.replays.takenByOtherLate} taken more than ${w.sharedReplayBoundMs / 1000} s after the original by an instance that was reading the nudge topic** (outside fault windows; the replay window is shared over the nudge topic).`),
    `- Duplicates arriving while the first attempt was pending at the same process: ${counts.inFlightDuplicates.sent}, ` +
      `${counts.inFlightDuplicates.taken} taken, ${counts.inFlightDuplicates.answeredBeforeFirst2xx} answered 2xx although the first failed.`,
    '',
    `| Changes | ${routes.join(' | ')} |`,
    `| --- | ${routes.map(() => '---:').join(' | ')} |`,
    row('announced (a delivery taken), all', a.all.announced),
    row('announced, outside fault windows', a.outside.announced),
    row('not announced (dropped, failed), all', a.all.unannounced),
    row('not announced, outside fault windows', a.outside.unannounced),
    '',
    `Announced changes made outside the fault windows (${a.deliveredOutside.count}; the quiet baseline before the first fault and the gaps between faults, ` +
      `a change made within ${w.nudgeBoundMs / 1000} s before a fault began left out): from making to Kafka p50 ${s(a.deliveredOutside.p50Ms)}, ` +
      `p99 ${s(a.deliveredOutside.p99Ms)}, max ${s(a.deliveredOutside.maxMs)} (goal: p99 ≤ ${w.goalP99Ms / 1000} s).`,
    ...(a.samples.length === 0
      ? []
      : ['', `By reconciliation outside the fault windows, e.g. ${a.samples.join('; ')}.`]),
    '',
  ];
}

function handoverLines(summary: RunSummary): string[] {
  const rows = handovers(summary);
  if (rows.length === 0) return [];
  return [
    'Handover (distributed mode): from the start of a process fault to ownership whole again, every partition ' +
      'of the offsets topic with configured locations and every location held by exactly one live instance ' +
      "(from each instance's `/status`). For a SIGSTOP: until the others hold the paused one's partitions.",
    '',
    '| Fault | Measured | Whole | Median handover | Max handover |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) => `| ${r.kind} | ${r.count} | ${r.recovered} | ${seconds(r.medianMs)} | ${seconds(r.maxMs)} |`,
    ),
    '',
  ];
}

function instanceLines(summary: RunSummary): string[] {
  if (summary.slots.length === 0) return [];
  const distributed = summary.mode === 'distributed';
  return [
    '## Instances',
    '',
    distributed
      ? 'One slot per instance of the deployment; each ran one process at a time (two during its rolling restart).'
      : 'One slot (single mode): a replacement process is started for each kill, rolling restart and SIGSTOP.',
    '',
    `| Instance | Processes | kill -9 | SIGSTOP | Unexpected exits | Peak RSS |${distributed ? ' Partitions at the end | Locations at the end |' : ''} Final SIGTERM |`,
    `| --- | ---: | ---: | ---: | ---: | ---: |${distributed ? ' --- | ---: |' : ''} --- |`,
    ...summary.slots.map(
      (f) =>
        `| ${f.slot} | ${f.processes.length} | ${f.kills} | ${f.sigstops} | ${f.unexpectedExits} | ${mib(f.peakRssBytes)} |` +
        (distributed ? ` ${f.finalPartitions.join(', ') || '—'} | ${f.finalLocations} |` : '') +
        ` ${f.finalExit || '—'} |`,
    ),
    '',
  ];
}

/**
 * reports/chaos.{md,json} for a full run (the published figures), reports/chaos-short.* for the short form;
 * distributed mode adds `-distributed` (chaos-distributed.*, chaos-short-distributed.*).
 */
export function writeReport(dir: string, summary: RunSummary, command: string): { md: string; json: string } {
  mkdirSync(dir, { recursive: true });
  const name = summary.profile === 'full' ? 'chaos' : `chaos-${summary.profile}`;
  const base = summary.mode === 'distributed' ? `${name}-distributed` : name;
  const md = join(dir, `${base}.md`);
  const json = join(dir, `${base}.json`);
  writeFileSync(md, markdown(summary, command));
  writeFileSync(
    json,
    `${JSON.stringify({ command, recoveries: recoveries(summary), handovers: handovers(summary), ...summary }, null, 2)}\n`,
  );
  return { md, json };
}
