import { describe, expect, it } from 'vitest';
import { diffAssignment, stickyAssign, type MemberClaim } from '../../../../src/kafka/group/assignment.js';

const range = (n: number) => Array.from({ length: n }, (_, p) => p);

function expectComplete(assignment: Map<string, number[]>, partitions: number[]): void {
  const all = [...assignment.values()].flat().sort((a, b) => a - b);
  expect(all).toEqual(partitions);
  const sizes = [...assignment.values()].map((p) => p.length);
  expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
}

/** Each member claims what it was assigned. */
function claims(assignment: Map<string, number[]>): MemberClaim[] {
  return [...assignment].map(([memberId, owned]) => ({ memberId, owned }));
}

function moved(before: Map<string, number[]>, after: Map<string, number[]>): number {
  let count = 0;
  for (const [member, partitions] of after)
    count += partitions.filter((p) => !(before.get(member) ?? []).includes(p)).length;
  return count;
}

describe('diffAssignment', () => {
  it('names the partitions taken, let go and kept', () => {
    expect(diffAssignment([0, 1, 2], [2, 3, 1])).toEqual({ assigned: [3], revoked: [0], kept: [1, 2] });
    expect(diffAssignment([], [4, 0])).toEqual({ assigned: [0, 4], revoked: [], kept: [] });
    expect(diffAssignment([5], [])).toEqual({ assigned: [], revoked: [5], kept: [] });
  });
});

describe('stickyAssign', () => {
  it('assigns every partition to exactly one member, balanced', () => {
    const members = ['c', 'a', 'b'].map((memberId) => ({ memberId, owned: [] }));
    const assignment = stickyAssign(members, range(24));
    expectComplete(assignment, range(24));
    expect([...assignment.keys()].sort()).toEqual(['a', 'b', 'c']);
  });

  it('gives members beyond the partition count nothing', () => {
    const members = range(5).map((i) => ({ memberId: `m${i}`, owned: [] }));
    const assignment = stickyAssign(members, range(3));
    expectComplete(new Map([...assignment].filter(([, p]) => p.length > 0)), range(3));
    expect([...assignment.values()].filter((p) => p.length === 0)).toHaveLength(2);
  });

  it('moves only the joining member share when a member joins', () => {
    const before = stickyAssign(
      [
        { memberId: 'a', owned: [] },
        { memberId: 'b', owned: [] },
      ],
      range(24),
    );
    const after = stickyAssign([...claims(before), { memberId: 'c', owned: [] }], range(24));
    expectComplete(after, range(24));
    expect(moved(before, after)).toBe(8);
    expect(after.get('c')).toHaveLength(8);
  });

  it('moves only the leaving member partitions when a member leaves', () => {
    const before = stickyAssign(
      ['a', 'b', 'c'].map((memberId) => ({ memberId, owned: [] })),
      range(24),
    );
    const after = stickyAssign(
      claims(before).filter((c) => c.memberId !== 'b'),
      range(24),
    );
    expectComplete(after, range(24));
    expect(moved(before, after)).toBe(8);
  });

  it('keeps an unchanged group unchanged', () => {
    const before = stickyAssign(
      ['a', 'b', 'c'].map((memberId) => ({ memberId, owned: [] })),
      range(7),
    );
    expect(stickyAssign(claims(before), range(7))).toEqual(before);
  });

  it('ignores a partition two members claim (one missed a rebalance) and claims of partitions that do not exist', () => {
    const assignment = stickyAssign(
      [
        { memberId: 'a', owned: [0, 1, 9] },
        { memberId: 'b', owned: [1, 2] },
      ],
      range(4),
    );
    expectComplete(assignment, range(4));
    expect(assignment.get('a')).toContain(0);
    expect(assignment.get('b')).toContain(2);
  });

  it('is the same whatever the order of the members', () => {
    const members = [
      { memberId: 'x', owned: [3, 4, 5] },
      { memberId: 'y', owned: [] },
      { memberId: 'z', owned: [0] },
    ];
    expect(stickyAssign(members, range(10))).toEqual(stickyAssign([...members].reverse(), range(10)));
  });
});
