#!/usr/bin/env node
// Known-vulnerability report for CI: `npm audit --omit=dev --json`, summarized in a few readable lines.
// Reporting, never blocking: it always exits 0 (a new advisory must not turn an unchanged build red; the
// report is read at review). When the advisory service cannot be reached (offline CI, a proxy that refuses
// the bulk endpoint), it says so in one line instead of failing.
import { spawnSync } from 'node:child_process';

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', timeout: 120_000 });
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = undefined;
}
const vulnerabilities = report?.vulnerabilities;
if (vulnerabilities === undefined) {
  const reason =
    [report?.message, report?.error?.summary, run.error?.message].find(
      (r) => typeof r === 'string' && r !== '',
    ) ??
    run.stderr.split('\n').find((l) => l.startsWith('npm error')) ??
    'no report';
  console.log(`audit: npm audit could not run (${String(reason).trim()}); not checked, not blocking`);
  process.exit(0);
}
const entries = Object.values(vulnerabilities);
if (entries.length === 0) {
  console.log('audit: npm audit found no known vulnerability in the production dependencies');
  process.exit(0);
}
const order = ['critical', 'high', 'moderate', 'low', 'info'];
entries.sort((a, b) => order.indexOf(a.severity) - order.indexOf(b.severity));
const counts = order.map((s) => [s, entries.filter((e) => e.severity === s).length]).filter(([, n]) => n > 0);
console.log(
  `audit: ${entries.length} vulnerable production package(s): ${counts.map(([s, n]) => `${n} ${s}`).join(', ')} (report only)`,
);
for (const entry of entries) {
  const titles = entry.via.filter((v) => typeof v === 'object').map((v) => v.title);
  const fix = entry.fixAvailable === false ? 'no fix yet' : 'fix available (npm audit fix)';
  console.log(
    `  ${entry.severity.padEnd(8)} ${entry.name} ${entry.range}: ${titles.join('; ') || `via ${entry.via.join(', ')}`} — ${fix}`,
  );
}
