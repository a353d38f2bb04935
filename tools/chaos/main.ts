/**
 * `npm run chaos [-- --seed N --minutes M --short --at-least-once --distributed --instances N --locations N
 *  --calls N --keep-stack --hostile-only --hold-freshness --report-dir D]` (docs/chaos.md)
 *
 * Builds nothing itself (`npm run chaos` builds first: `prechaos`), runs one chaos run (tools/chaos/run.ts) and
 * writes its report. Exit 0 when the run found no violation, 1 otherwise, 2 on a bad command line, 130 on Ctrl-C.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from './processes.js';
import { writeReport } from './report.js';
import { ChaosRun } from './run.js';
import { profile } from './schedule.js';

// kafkajs' retry timers trip Node 24's TimeoutNegativeWarning (harmless); keep the run's output readable.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'TimeoutNegativeWarning')
    process.stderr.write(`${warning.name}: ${warning.message}\n`);
});

function usage(message: string): never {
  process.stderr.write(
    `chaos: ${message}\nusage: npm run chaos -- [--seed N] [--minutes M] [--short] [--at-least-once] [--distributed [--instances N]] [--locations N] [--calls N] [--keep-stack] [--hostile-only] [--hold-freshness] [--report-dir DIR]\n`,
  );
  process.exit(2);
}

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) <= 0) usage(`${name} must be a positive integer, got ${value}`);
  return Number(value);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      seed: { type: 'string' },
      minutes: { type: 'string' },
      short: { type: 'boolean', default: false },
      'at-least-once': { type: 'boolean', default: false },
      distributed: { type: 'boolean', default: false },
      instances: { type: 'string' },
      'keep-stack': { type: 'boolean', default: false },
      'hostile-only': { type: 'boolean', default: false },
      'hold-freshness': { type: 'boolean', default: false },
      locations: { type: 'string' },
      calls: { type: 'string' },
      'report-dir': { type: 'string' },
    },
    strict: true,
  }));
} catch (error) {
  usage((error as Error).message);
}
const seed = positiveInt('--seed', values.seed) ?? 1 + Math.floor(Math.random() * 1_000_000);
const minutes = positiveInt('--minutes', values.minutes);
const instances = positiveInt('--instances', values.instances);
if (instances !== undefined && !values.distributed) usage('--instances needs --distributed');
if (instances !== undefined && instances < 2) usage('--instances must be at least 2');
const chosen = profile(values.short ? 'short' : 'full', minutes, values.distributed);
chosen.locations = positiveInt('--locations', values.locations) ?? chosen.locations;
chosen.callsPerLocation = positiveInt('--calls', values.calls) ?? chosen.callsPerLocation;
const runDir = join(
  repoRoot,
  '.cache',
  'chaos',
  `${new Date().toISOString().replace(/[:.]/g, '-')}-seed-${seed}`,
);
const command = [
  'npm run chaos --',
  `--seed ${seed}`,
  ...(values.short ? ['--short'] : []),
  ...(minutes === undefined ? [] : [`--minutes ${minutes}`]),
  ...(values['at-least-once'] ? ['--at-least-once'] : []),
  ...(values.distributed ? ['--distributed'] : []),
  ...(instances === undefined ? [] : [`--instances ${instances}`]),
  ...(values.locations === undefined ? [] : [`--locations ${values.locations}`]),
  ...(values.calls === undefined ? [] : [`--calls ${values.calls}`]),
  ...(values['hold-freshness'] ? ['--hold-freshness'] : []),
].join(' ');
process.stdout.write(`chaos: seed ${seed} (replay: ${command})\n`);

const run = new ChaosRun({
  seed,
  profile: chosen,
  exactlyOnce: !values['at-least-once'],
  runDir,
  keepStack: values['keep-stack'],
  hostileOnly: values['hostile-only'],
  distributed: values.distributed,
  instances: instances ?? 3,
  holdFreshness: values['hold-freshness'],
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`chaos: ${signal}; stopping what the run started (seed ${seed})\n`);
    run.abort();
  });
const summary = await run.run();
const { md, json } = writeReport(values['report-dir'] ?? join(repoRoot, 'reports'), summary, command);
process.stdout.write(`chaos: report ${md} and ${json}\n`);
if (summary.violations.length > 0) {
  process.stdout.write(
    `chaos: FAILED (seed ${seed}):\n${summary.violations.map((v) => `  - ${v}`).join('\n')}\n`,
  );
  process.exitCode = 1;
} else process.stdout.write(`chaos: PASSED (seed ${seed})\n`);
if (summary.lateChanges.length > 0)
  process.stdout.write(
    `chaos: late changes reported, not violations (a fault's without --hold-freshness; the webhook p99 always):\n${summary.lateChanges.map((v) => `  - ${v.slice(0, 300)}`).join('\n')}\n`,
  );
