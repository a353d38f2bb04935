import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isNewest, stampedRoundRobin, startStampOf } from '../../../../src/kafka/group/start-stamp.js';

const { AssignerProtocol } = kafkajs;

function metadataWith(userData: Buffer): Buffer {
  return AssignerProtocol.MemberMetadata.encode({ version: 0, topics: ['offsets'], userData });
}

describe('isNewest', () => {
  it('holds for the member that started last, and for no other', () => {
    const members = [
      { memberId: 'a', startedAt: 100 },
      { memberId: 'b', startedAt: 300 },
      { memberId: 'c', startedAt: 200 },
    ];
    for (const initialisation of ['first', 'again'] as const)
      expect(
        members.filter((m) => isNewest(m.memberId, members, initialisation)).map((m) => m.memberId),
      ).toEqual(['b']);
  });

  it('orders equal stamps by member id, so exactly one of them is the newest', () => {
    const members = [
      { memberId: 'm-2', startedAt: 500 },
      { memberId: 'm-1', startedAt: 500 },
      { memberId: 'm-3', startedAt: 499 },
    ];
    expect(members.filter((m) => isNewest(m.memberId, members, 'first')).map((m) => m.memberId)).toEqual([
      'm-2',
    ]);
  });

  it('lets an upgrade take over from an earlier version (no stamp) at its start, and a rollback keep the id', () => {
    // An earlier version initialised at start unconditionally, and again only when alone in the group.
    const upgrade = [
      { memberId: 'earlier-version', startedAt: null },
      { memberId: 'new', startedAt: 1 },
    ];
    expect(isNewest('new', upgrade, 'first')).toBe(true);
    // Once the earlier version's instance (a rollback's, or one not yet stopped) writes, this one does not
    // initialise again over it.
    expect(isNewest('new', upgrade, 'again')).toBe(false);
    expect(isNewest('earlier-version', upgrade, 'first')).toBe(false);
  });

  it("lets a standby take over (a re-initialisation) once its newer instance left, and once an earlier version's member left", () => {
    // (a) B started after A: A stands by while B is a member, and may take over when A is alone.
    const withB = [
      { memberId: 'a', startedAt: 100 },
      { memberId: 'b', startedAt: 200 },
    ];
    expect(isNewest('a', withB, 'again')).toBe(false);
    expect(isNewest('a', [{ memberId: 'a', startedAt: 100 }], 'again')).toBe(true);
    // (b) An earlier version's member (no stamp) counts as newer at a re-initialisation, until it leaves.
    const withEarlier = [
      { memberId: 'earlier-version', startedAt: null },
      { memberId: 'b', startedAt: 200 },
    ];
    expect(isNewest('b', withEarlier, 'again')).toBe(false);
    expect(isNewest('b', [{ memberId: 'b', startedAt: 200 }], 'again')).toBe(true);
  });

  it('is false for a member that is not in the group, or carries no stamp itself', () => {
    expect(isNewest('gone', [{ memberId: 'other', startedAt: 1 }], 'first')).toBe(false);
    expect(isNewest('me', [{ memberId: 'me', startedAt: null }], 'first')).toBe(false);
  });
});

describe('startStampOf', () => {
  it('reads back the stamp the assignor put in the member metadata', () => {
    const assigner = stampedRoundRobin(1_764_000_000_123)({
      cluster: {} as never,
      groupId: 'g',
      logger: {} as never,
    });
    expect(assigner.name).toBe('RoundRobinAssigner');
    expect(startStampOf(assigner.protocol({ topics: ['offsets'] }).metadata)).toBe(1_764_000_000_123);
  });

  it('finds no stamp in empty, foreign or unreadable metadata', () => {
    expect(startStampOf(Buffer.alloc(0))).toBeNull();
    expect(startStampOf(undefined)).toBeNull();
    expect(startStampOf(metadataWith(Buffer.alloc(0)))).toBeNull();
    expect(startStampOf(metadataWith(Buffer.from('{"owned":[1,2]}')))).toBeNull();
    expect(startStampOf(metadataWith(Buffer.from('not json')))).toBeNull();
    expect(startStampOf(metadataWith(Buffer.from('{"startedAt":"yesterday"}')))).toBeNull();
    expect(startStampOf(Buffer.from([0, 0, 0]))).toBeNull();
  });
});
