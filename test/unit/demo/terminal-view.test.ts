/**
 * The demo's live view on a terminal, replayed into a terminal emulator (xterm.js, headless): what a person sees
 * after frames, Ctrl-C and the summary, on a terminal narrower than the table and shorter than its rows.
 */
import { Terminal } from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import { renderFrame, type ViewFrame } from '../../../src/demo/live-view.js';
import { TerminalView, type ViewOutput } from '../../../src/demo/terminal-view.js';
import { locationStatus } from './location-status.js';

const frame = (at: number, locations: number): ViewFrame => ({
  at: Date.parse('2026-01-01T00:00:10.000Z') + at * 1000,
  locations: Array.from({ length: locations }, (_, i) =>
    locationStatus(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, at * 10 + i, {
      state: 'waiting',
    }),
  ),
});

/** A terminal of `columns` x `rows` and the tty stream the view writes to. */
function screen(columns: number, rows: number) {
  const terminal = new Terminal({
    cols: columns,
    rows,
    scrollback: 1000,
    allowProposedApi: true,
    convertEol: false,
  });
  let raw = '';
  let pending = Promise.resolve();
  const write = (text: string) => {
    raw += text;
    // A tty's output processing (onlcr) turns \n into \r\n.
    const data = text.replace(/\n/g, '\r\n');
    pending = pending.then(() => new Promise<void>((done) => terminal.write(data, done)));
    return true;
  };
  const out: ViewOutput = { write, isTTY: true, columns, rows };
  /** Every line of the scrollback and the screen, trailing blanks cut, and whether it continues a wrapped one. */
  const lines = async () => {
    await pending;
    const buffer = terminal.buffer.active;
    return Array.from({ length: buffer.length }, (_, i) => {
      const line = buffer.getLine(i);
      return { text: line?.translateToString(true) ?? '', wrapped: line?.isWrapped ?? false };
    });
  };
  return { out, write, lines, raw: () => raw };
}

describe('the demo live view on a terminal', () => {
  it('after Ctrl-C shows the last frame, the notice, one final table and the summary, with no half-drawn table and the cursor shown', async () => {
    // 80 columns (the table is wider) and 8 rows (2 header lines + 6 locations do not fit above the cursor line).
    const { out, write, lines, raw } = screen(80, 8);
    const view = new TerminalView(out);
    let previous: ViewFrame | null = null;
    for (let at = 0; at < 4; at += 1) {
      const current = frame(at, 6);
      view.draw(renderFrame(previous, current));
      previous = current;
    }
    // Ctrl-C: the terminal echoes ^C where the cursor is, the CLI's handler prints its notice, the view lets go.
    write('^C');
    write('\nstopping ...\n');
    view.release();
    for (let at = 4; at < 7; at += 1) view.draw(renderFrame(previous, frame(at, 6)));
    write('\nSummary: 66 call records published from 6 locations.\n');

    const shown = (await lines()).filter((line) => line.text !== '');
    const header: unknown[] = [expect.stringMatching(/^location +state/)];
    const rows: unknown[] = Array.from({ length: 4 }, (): unknown =>
      expect.stringMatching(/^00000000-0000-4000-8000-\d{12} +waiting/),
    );
    expect(shown.filter((line) => line.wrapped)).toEqual([]);
    expect(shown.map((line) => line.text)).toEqual([
      expect.stringMatching(/^published 195 records/),
      ...header,
      ...rows,
      '… 2 more lines (the whole table: /status)',
      '^C',
      'stopping ...',
      expect.stringMatching(/^published 375 records/),
      ...header,
      ...rows,
      '… 2 more lines (the whole table: /status)',
      'Summary: 66 call records published from 6 locations.',
    ]);
    for (const line of shown) expect(line.text.length).toBeLessThan(80);
    // The cursor is never hidden, so no way out of the demo leaves a terminal without one.
    expect(raw()).not.toContain('\x1b[?25l');
  });

  it('appends every frame whole when the output is not a terminal', () => {
    let written = '';
    const view = new TerminalView({ write: (text) => ((written += text), true), isTTY: false });
    view.draw(['a', 'b']);
    view.draw(['c']);
    expect(written).toBe('a\nb\nc\n');
  });
});
