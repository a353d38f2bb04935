/**
 * `calls-connector demo` on a real pseudo-terminal (util-linux `script`), 80 columns wide (narrower than the
 * table), stopped with Ctrl-C typed on it; the bytes it wrote are replayed into a terminal emulator (xterm.js,
 * headless) to see the screen a person is left with.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Terminal } from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import { stackEndpoints } from '../../support/stack.js';

const cli = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

describe('calls-connector demo on a terminal', () => {
  it('leaves a clean screen after Ctrl-C: one last table, the notice, the final table, the summary, the cursor shown', async () => {
    // util-linux `script` gives the demo a pseudo-terminal (no native module needed); this is a Linux test.
    expect(spawnSync('script', ['--version']).status, 'util-linux script is needed').toBe(0);
    const { brokers, registryUrl } = stackEndpoints();
    const dir = await mkdtemp(join(tmpdir(), 'calls-demo-tty-'));
    const command = [
      process.execPath,
      cli,
      'demo',
      '--locations',
      '2',
      '--calls',
      '100',
      '--metrics-port',
      '0',
    ]
      .concat(['--dir', dir])
      .map(quote)
      .join(' ');
    const child = spawn('script', ['-qfec', `stty cols 80 rows 14; exec ${command}`, '/dev/null'], {
      env: { ...process.env, KAFKA_BROKERS: brokers.join(','), SCHEMA_REGISTRY_URL: registryUrl },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    const terminal = new Terminal({ cols: 80, rows: 14, scrollback: 1000, allowProposedApi: true });
    let raw = '';
    let replayed = Promise.resolve();
    let interrupted = false;
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      raw += text;
      replayed = replayed.then(() => new Promise<void>((done) => terminal.write(text, done)));
      // Ctrl-C, typed on the terminal, once the live view has redrawn its table a few times.
      if (!interrupted && (raw.match(/published \d+ records/g)?.length ?? 0) >= 3) {
        interrupted = true;
        child.stdin.write('\x03');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    const code = await exited;
    await replayed;
    expect(code, raw).toBe(0);

    const buffer = terminal.buffer.active;
    const lines = Array.from({ length: buffer.length }, (_, i) => buffer.getLine(i));
    const text = lines.map((line) => line?.translateToString(true) ?? '');
    const notice = text.indexOf('stopping ...');
    expect(notice, text.join('\n')).toBeGreaterThan(0);
    const tables = (from: number, to: number) =>
      text.slice(from, to).filter((line) => /^published \d+ records/.test(line)).length;
    // Redrawn in place: the table the person saw when pressing Ctrl-C, then only the final one.
    expect(tables(0, notice)).toBe(1);
    expect(text[notice - 1]).toBe('^C');
    const summary = text.findIndex((line) => line.startsWith('Summary: '));
    expect(summary).toBeGreaterThan(notice);
    expect(tables(notice, summary)).toBe(1);
    // No table row wrapped onto a second line (a redraw would leave its tail behind). The lines before the view
    // (the authorization URL) and after the summary (the commands to paste) are long, and may wrap.
    const view = text.findIndex((line) => /^published \d+ records/.test(line));
    const wrapped = lines.slice(view, summary).filter((line) => line?.isWrapped);
    expect(
      wrapped.map((line) => line?.translateToString(true)),
      text.join('\n'),
    ).toEqual([]);
    expect(text.slice(notice + 1, notice + 3)).toEqual([
      expect.stringMatching(/^published \d+ records/),
      expect.stringMatching(/^location +state/),
    ]);
    expect(raw).not.toContain('\x1b[?25l');
  });
});
