import { describe, expect, it } from 'vitest';
import { logPage, logTraversalComplete } from '../../../../src/sync/location/location-log.js';
import type { AssembledPage } from '../../../../src/sync/location/page-pipeline.js';
import { TraversalRun } from '../../../../src/sync/location/traversal-run.js';
import { capturingLogger } from '../../../support/logger.js';
import { preparedPage } from '../../../support/sync/prepared-page.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const PINO_DEBUG = 20;
const PINO_INFO = 30;
const PINO_WARN = 40;

function traversal() {
  const captured = capturingLogger();
  return { run: new TraversalRun(LOC, 'live', 1_000, captured.logger), captured };
}

const page = (unenriched: AssembledPage['unenriched']): AssembledPage => ({
  calls: [],
  deadLetters: [],
  tombstones: [],
  redacted: 0,
  unenriched,
  unenrichedExamples: [...unenriched.keys()].map((reason) => ({ uid: 'a', reason, detail: 'x' })),
});

describe('location log lines', () => {
  it("logs an idle poll's completion at debug, and a traversal that published at info, with its counts", () => {
    const idle = traversal();
    idle.run.pages = 1;
    logTraversalComplete(idle.captured.logger, idle.run, null, 1_500);
    expect(idle.captured.lines()[0]).toMatchObject({ level: PINO_DEBUG, msg: 'traversal complete' });
    const busy = traversal();
    busy.run.pages = 2;
    busy.run.published = 3;
    logTraversalComplete(busy.captured.logger, busy.run, 'since', 1_500);
    expect(busy.captured.lines()[0]).toMatchObject({
      level: PINO_INFO,
      pages: 2,
      published: 3,
      since: 'since',
      durationMs: 500,
    });
  });

  it('tells calls published unenriched at info when all were gone, else at warn', () => {
    const gone = traversal();
    logPage(gone.run, preparedPage([]), page(new Map([['gone', 1]])), null);
    expect(gone.captured.lines()[0]).toMatchObject({ level: PINO_INFO, counts: { gone: 1 } });
    const refused = traversal();
    logPage(refused.run, preparedPage([]), page(new Map([['refused', 1]])), null);
    expect(refused.captured.lines()[0]).toMatchObject({ level: PINO_WARN, counts: { refused: 1 } });
  });
});
