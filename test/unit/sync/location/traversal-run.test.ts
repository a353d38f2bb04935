import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { InvalidCursorError } from '../../../../src/sync/ports.js';
import { MAX_RESTARTS_WITHOUT_PROGRESS, TraversalRun } from '../../../../src/sync/location/traversal-run.js';
import { capturingLogger } from '../../../support/logger.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const rejection = () =>
  new InvalidCursorError({ apiCode: null, status: 400, recognised: false, detail: 'HTTP 400: expired' });

function run(lane: 'live' | 'history' = 'live') {
  const captured = capturingLogger();
  return { traversal: new TraversalRun(LOC, lane, 1_000, captured.logger), captured };
}

describe('TraversalRun', () => {
  it('restarts after a rejected cursor until more than the allowed rejections in a row made no progress', () => {
    const { traversal } = run();
    for (let i = 0; i < MAX_RESTARTS_WITHOUT_PROGRESS; i++)
      expect(traversal.cursorRejected(rejection())).toBeNull();
    const exhausted = traversal.cursorRejected(rejection());
    expect(exhausted).toBeInstanceOf(RetriableError);
    expect(exhausted?.code).toBe('CURSOR_RESTARTS_EXHAUSTED');
    expect(exhausted?.cause).toBeInstanceOf(InvalidCursorError);
  });

  it('counts rejections from zero again once a page made progress', () => {
    const { traversal } = run();
    for (let i = 0; i < MAX_RESTARTS_WITHOUT_PROGRESS; i++) traversal.cursorRejected(rejection());
    traversal.progressed();
    for (let i = 0; i < MAX_RESTARTS_WITHOUT_PROGRESS; i++)
      expect(traversal.cursorRejected(rejection())).toBeNull();
  });

  it('forgets the cursors followed when it restarts, so the restarted traversal is not taken for a loop', () => {
    const { traversal } = run();
    traversal.detector.sent('c1');
    expect(traversal.detector.isLoop('c1')).toBe(true);
    traversal.cursorRejected(rejection());
    expect(traversal.detector.isLoop('c1')).toBe(false);
  });

  it('names a cursor loop a fatal CURSOR_LOOP of its location and traversal', () => {
    const { traversal } = run();
    const error = traversal.cursorLoop();
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('CURSOR_LOOP');
    expect(error.details).toEqual({ locationUid: LOC, traversal: traversal.id });
  });

  it('is an idle poll when its one page published and dead-lettered nothing', () => {
    const { traversal } = run();
    traversal.pages = 1;
    expect(traversal.idle).toBe(true);
    traversal.published = 1;
    expect(traversal.idle).toBe(false);
  });

  it("binds its lines to the location and the traversal, and a history lane's to the lane", () => {
    const live = run('live');
    live.traversal.log.info('x');
    expect(live.captured.lines()[0]).toMatchObject({ location: LOC, traversal: live.traversal.id });
    expect(live.captured.lines()[0]).not.toHaveProperty('lane');
    const history = run('history');
    history.traversal.log.info('y');
    expect(history.captured.lines()[0]).toMatchObject({ traversal: history.traversal.id, lane: 'history' });
  });
});
