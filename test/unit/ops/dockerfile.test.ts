/**
 * The Dockerfile cannot be built here (no Docker engine); this holds it to what the image must be:
 * multi-stage, production dependencies only, non-root, a health check on the metrics port, the CLI as
 * entry point, and only files that exist and are not excluded from the build context.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

/** Instructions with continuation lines joined; comments dropped. */
function instructions(dockerfile: string): { op: string; args: string }[] {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

const all = instructions(read('Dockerfile'));
const stages: { op: string; args: string }[][] = [];
for (const instruction of all) {
  if (instruction.op === 'FROM') stages.push([]);
  stages.at(-1)?.push(instruction);
}
const runtime = stages.at(-1) ?? [];
const args = (stage: { op: string; args: string }[], op: string): string[] =>
  stage.filter((i) => i.op === op).map((i) => i.args);

describe('Dockerfile', () => {
  it('builds in one stage and runs from another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(args(stages[0] ?? [], 'RUN').join('\n')).toMatch(/npm run build/);
    expect(args(runtime, 'COPY').some((a) => a.startsWith('--from=build'))).toBe(true);
  });

  it('bases both stages on one pinned Node image that satisfies package.json engines', () => {
    const image = /^ARG NODE_IMAGE=(\S+)$/m.exec(read('Dockerfile'))?.[1] ?? '';
    expect(image).toMatch(/^node:\d+\.\d+\.\d+-(slim|alpine)@sha256:[0-9a-f]{64}$/);
    for (const stage of stages) expect(stage[0]?.args).toMatch(/^\$\{NODE_IMAGE\} AS \w+$/);
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    const minimum = Number(/>=\s*(\d+)/.exec(engines.node)?.[1]);
    expect(Number(/^node:(\d+)/.exec(image)?.[1])).toBeGreaterThanOrEqual(minimum);
  });

  it('installs only production dependencies in the runtime stage, without running the tsc prepare script', () => {
    const runs = args(runtime, 'RUN').join('\n');
    expect(runs).toMatch(/npm ci --omit=dev --ignore-scripts/);
    expect(args(runtime, 'COPY').some((a) => /node_modules/.test(a))).toBe(false);
  });

  it('runs as a non-root user', () => {
    const users = args(runtime, 'USER');
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
  });

  it('checks health with node against /healthz on the metrics port', () => {
    const healthcheck = args(runtime, 'HEALTHCHECK').join(' ');
    expect(healthcheck).toMatch(/CMD \["node", "-e", .*fetch\(process\.env\.CALLS_CONNECTOR_HEALTH_URL\)/);
    expect(args(runtime, 'ENV').join(' ')).toContain(
      'CALLS_CONNECTOR_HEALTH_URL=http://127.0.0.1:9464/healthz',
    );
    expect(args(runtime, 'EXPOSE')).toContain('9464');
  });

  it('uses the CLI as entry point, the path package.json publishes as its bin', () => {
    const { bin } = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(JSON.parse(args(runtime, 'ENTRYPOINT')[0] ?? '[]')).toEqual(['node', bin['calls-connector']]);
    expect(JSON.parse(args(runtime, 'CMD')[0] ?? '[]')).toEqual([
      'run',
      '--config',
      '/etc/calls-connector/config.yaml',
    ]);
  });

  it('copies only paths that exist and that .dockerignore lets into the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const sources = all
      .filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(new URL(source, root)), source).toBe(true);
      expect(ignored, source).not.toContain(source);
    }
    for (const heavy of ['node_modules', '.git', 'dist', '.cache', '.tools'])
      expect(ignored).toContain(heavy);
  });
});
