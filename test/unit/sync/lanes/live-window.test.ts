import { describe, expect, it } from 'vitest';
import { LiveWindow, withoutSupersededByLive } from '../../../../src/sync/lanes/live-window.js';
import { preparedPage } from '../../../support/sync/prepared-page.js';

describe('LiveWindow', () => {
  it('drops a history call the live lane published after its listing at a newer updatedAt', () => {
    const window = new LiveWindow();
    const mark = window.mark();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:59:00Z' }]);
    expect(window.supersededByLive('a', '2026-11-24T09:00:00Z', mark)).toBe(true);
    expect(window.supersededByLive('b', '2026-11-24T09:00:00Z', mark)).toBe(false);
  });

  it('keeps a history call the live lane published before its listing (the listing shows the current version)', () => {
    const window = new LiveWindow();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:59:00Z' }]);
    const mark = window.mark();
    expect(window.supersededByLive('a', '2026-11-24T09:00:00Z', mark)).toBe(false);
  });

  it('keeps a history call at a version not older than the live one', () => {
    const window = new LiveWindow();
    const mark = window.mark();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:00:00Z' }]);
    expect(window.supersededByLive('a', '2026-11-24T10:00:00+01:00', mark)).toBe(false);
  });

  it('remembers the newest version of a uid published twice', () => {
    const window = new LiveWindow();
    const mark = window.mark();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:59:00Z' }]);
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:58:00Z' }]);
    expect(window.supersededByLive('a', '2026-11-24T09:58:30Z', mark)).toBe(true);
  });

  it('is pruned to what the pages in flight can need', () => {
    const window = new LiveWindow();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:59:00Z' }]);
    const mark = window.mark();
    window.record([{ uid: 'b', updatedAt: '2026-11-24T09:59:00Z' }]);
    window.prune(mark);
    expect(window.size).toBe(1);
    expect(window.supersededByLive('b', '2026-11-24T09:00:00Z', mark)).toBe(true);
    window.prune(null);
    expect(window.size).toBe(0);
  });

  it('counts a commit without calls as nothing', () => {
    const window = new LiveWindow();
    const mark = window.mark();
    window.record([]);
    expect(window.mark()).toBe(mark);
  });
});

describe('withoutSupersededByLive', () => {
  it('drops from a history page the calls the live lane published newer since its listing, and counts them', () => {
    const window = new LiveWindow();
    const mark = window.mark();
    window.record([{ uid: 'a', updatedAt: '2026-11-24T09:59:00Z' }]);
    const prepared = preparedPage([
      { uid: 'a', updatedAt: '2026-11-24T09:00:00Z' },
      { uid: 'b', updatedAt: '2026-11-24T09:00:00Z' },
    ]);
    const { kept, superseded } = withoutSupersededByLive(prepared, window, mark);
    expect(kept.enriched.map((item) => item.listed.uid)).toEqual(['b']);
    expect(superseded).toBe(1);
  });

  it('keeps the page itself when the window is empty', () => {
    const prepared = preparedPage([{ uid: 'a', updatedAt: '2026-11-24T09:00:00Z' }]);
    expect(withoutSupersededByLive(prepared, new LiveWindow(), 0)).toEqual({ kept: prepared, superseded: 0 });
  });
});
