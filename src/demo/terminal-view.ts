/**
 * Draws the demo's live view: on a terminal each frame replaces the previous one in place (cursor up over the
 * rows it drew, clear to the end of the screen), fitted to the terminal's size (see fitToTerminal) so that a
 * redraw erases the whole previous frame; elsewhere (a pipe, a log file) each frame is appended.
 *
 * The cursor is never hidden, so no exit path (Ctrl-C, a crash) can leave the terminal without one.
 */
import { fitToTerminal } from './live-view.js';

/** The part of a tty.WriteStream the view uses. */
export interface ViewOutput {
  write(text: string): boolean;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

export class TerminalView {
  /** Rows of the frame on screen that the next draw goes back over; 0 = draw below what is there. */
  private drawnRows = 0;

  constructor(private readonly out: ViewOutput) {}

  get isTerminal(): boolean {
    return this.out.isTTY === true;
  }

  /** Draws the frame: over the previous one on a terminal, appended otherwise. */
  draw(lines: readonly string[]): void {
    if (!this.isTerminal) {
      this.out.write(`${lines.join('\n')}\n`);
      return;
    }
    const fitted = fitToTerminal(lines, this.out.columns, this.out.rows);
    // One write, so that nothing (a signal handler's line) lands between the erase and the new frame.
    const erase = this.drawnRows > 0 ? `\r\x1b[${this.drawnRows}A\x1b[0J` : '';
    this.out.write(`${erase}${fitted.join('\n')}\n`);
    this.drawnRows = fitted.length;
  }

  /**
   * Someone else wrote below the frame (the Ctrl-C notice, and the terminal's own ^C echo): the frame is no
   * longer right above the cursor, so the next frame is drawn below rather than over it.
   */
  release(): void {
    this.drawnRows = 0;
  }
}
