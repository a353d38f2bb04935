/**
 * Spec 4.3, one test (or more) per numbered rule, against the running sandbox over HTTPS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox, type SandboxCall } from '../../src/index.js';
import { SandboxTestClient, uidsOf, type ListPage } from './client.js';

const LISTED_KEYS = [
  'uid',
  'locationUid',
  'updatedAt',
  'locationPhoneNumber',
  'customerPhoneNumber',
  'startedAt',
  'endedAt',
  'isPrivate',
  'conversationUid',
].sort();

describe('GET /v4/calls (spec 4.3)', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;
  let token: string;
  let location: string;
  let truth: SandboxCall[];

  beforeAll(async () => {
    sandbox = await startSandbox({
      data: {
        seed: 11,
        locations: 3,
        callsPerLocation: 400,
        thirdPartyRatio: 0.1,
        unrepresentableRatio: 0.1,
        sameInstantGroups: { count: 1, size: 150 },
      },
    });
    client = new SandboxTestClient(sandbox);
    token = sandbox.issueTokens().accessToken;
    location = sandbox.locations[0] as string;
    truth = sandbox.admin.truth(location);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  function updatedAts(pages: ListPage[]): number[] {
    return pages.flatMap((p) => p.data.map((i) => Date.parse(String(i.updatedAt))));
  }

  describe('rule 1: sorting by updatedAt', () => {
    it('returns the oldest change first with order=asc, and asc is the default', async () => {
      const asc = await client.listAll(token, { locationUid: location, limit: 100, order: 'asc' });
      const byDefault = await client.listAll(token, { locationUid: location, limit: 100 });
      const times = updatedAts(asc);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(uidsOf(asc)).toEqual(truth.map((c) => c.uid));
      expect(uidsOf(byDefault)).toEqual(uidsOf(asc));
    });

    it('returns the most recently updated first with order=desc', async () => {
      const desc = await client.listAll(token, { locationUid: location, limit: 100, order: 'desc' });
      const times = updatedAts(desc);
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect(uidsOf(desc)).toEqual(truth.map((c) => c.uid).reverse());
    });

    it('merges every location of the token in updatedAt order when no locationUid is given', async () => {
      const pages = await client.listAll(token, { limit: 100 });
      const all = sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
      all.sort((a, b) => Date.parse(a.updatedAt) - Date.parse(b.updatedAt) || (a.uid < b.uid ? -1 : 1));
      expect(uidsOf(pages)).toEqual(all.map((c) => c.uid));
    });
  });

  describe('rule 2: since is inclusive', () => {
    it('returns every record with updatedAt >= since, including those exactly at since', async () => {
      const boundary = truth[200] as SandboxCall;
      const pages = await client.listAll(token, {
        locationUid: location,
        since: boundary.updatedAt,
        limit: 100,
      });
      const expected = truth.filter((c) => Date.parse(c.updatedAt) >= Date.parse(boundary.updatedAt));
      expect(uidsOf(pages)).toEqual(expected.map((c) => c.uid));
      expect(uidsOf(pages)).toContain(boundary.uid);
    });

    it('accepts a since with a UTC offset as the same instant', async () => {
      const boundary = truth[120] as SandboxCall;
      const instant = new Date(Date.parse(boundary.updatedAt));
      const shifted = new Date(instant.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      const a = await client.listAll(token, { locationUid: location, since: boundary.updatedAt, limit: 100 });
      const b = await client.listAll(token, { locationUid: location, since: shifted, limit: 100 });
      expect(uidsOf(b)).toEqual(uidsOf(a));
    });

    it('rejects a since that is not a date-time with 400 invalid_request', async () => {
      const reply = await client.list(token, { locationUid: location, since: 'yesterday' });
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({
        error: { code: 'invalid_request', message: expect.any(String) as unknown },
      });
    });
  });

  describe('rule 3: the cursor carries since, order and locationUid', () => {
    it('ignores since, order and locationUid sent along with a cursor', async () => {
      const since = (truth[50] as SandboxCall).updatedAt;
      const first = await client.list(token, { locationUid: location, since, order: 'asc', limit: 30 });
      const cursor = first.page.metadata.nextCursor as string;
      const alone = await client.list(token, { cursor, limit: 30 });
      const other = sandbox.locations[1] as string;
      const noisy = await client.list(token, {
        cursor,
        limit: 30,
        locationUid: other,
        order: 'desc',
        since: '2000-01-01T00:00:00Z',
      });
      expect(noisy.status).toBe(200);
      expect(uidsOf([noisy.page])).toEqual(uidsOf([alone.page]));
      expect(uidsOf([first.page, alone.page])).toEqual(
        truth
          .filter((c) => Date.parse(c.updatedAt) >= Date.parse(since))
          .map((c) => c.uid)
          .slice(0, uidsOf([first.page, alone.page]).length),
      );
      expect(alone.page.data.every((i) => i.locationUid === location)).toBe(true);
    });

    it('keeps the order of the listing it came from', async () => {
      const first = await client.list(token, { locationUid: location, order: 'desc', limit: 20 });
      const next = await client.list(token, {
        cursor: first.page.metadata.nextCursor as string,
        order: 'asc',
        limit: 20,
      });
      const times = updatedAts([first.page, next.page]);
      expect(times).toEqual([...times].sort((a, b) => b - a));
    });

    it('rejects a cursor it did not issue with 400 invalid_cursor', async () => {
      const first = await client.list(token, { locationUid: location, limit: 5 });
      const cursor = first.page.metadata.nextCursor as string;
      const [body, mac] = cursor.split('.') as [string, string];
      const forged = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), l: sandbox.locations[2] }),
      ).toString('base64url');
      for (const bad of ['garbage', `${forged}.${mac}`, `${body}.${mac.slice(1)}`]) {
        const reply = await client.list(token, { cursor: bad });
        expect(reply.status).toBe(400);
        expect(reply.json).toMatchObject({ error: { code: 'invalid_cursor' } });
      }
    });
  });

  describe('rule 4: nextCursor until the listing is exhausted', () => {
    it('sets nextCursor on every page but the last, and following it returns every record once', async () => {
      const pages = await client.listAll(token, { locationUid: location, limit: 100 });
      expect(pages.length).toBeGreaterThan(2);
      expect(pages.slice(0, -1).every((p) => p.metadata.nextCursor !== null)).toBe(true);
      expect(pages.at(-1)?.metadata.nextCursor).toBeNull();
      const uids = uidsOf(pages);
      expect(new Set(uids).size).toBe(uids.length);
      expect(uids.length).toBe(truth.length);
    });

    it('returns null nextCursor on a page that exactly exhausts the listing', async () => {
      const since = (truth.at(-5) as SandboxCall).updatedAt;
      const expected = truth.filter((c) => Date.parse(c.updatedAt) >= Date.parse(since));
      const reply = await client.list(token, { locationUid: location, since, limit: 100 });
      expect(uidsOf([reply.page])).toEqual(expected.map((c) => c.uid));
      expect(reply.page.metadata.nextCursor).toBeNull();
    });
  });

  describe('rule 5: advancing since mid-traversal skips records sharing the boundary instant', () => {
    it('serves a group of calls sharing one updatedAt larger than a page, whole only by cursor', async () => {
      const counts = new Map<string, number>();
      for (const c of truth) counts.set(c.updatedAt, (counts.get(c.updatedAt) ?? 0) + 1);
      const [instant, size] = [...counts].sort((a, b) => b[1] - a[1])[0] as [string, number];
      expect(size).toBeGreaterThan(100);
      const group = truth.filter((c) => c.updatedAt === instant).map((c) => c.uid);

      const first = await client.list(token, { locationUid: location, since: instant, limit: 100 });
      expect(first.page.data.every((i) => i.updatedAt === instant)).toBe(true);
      // Restarting at since = the last updatedAt seen never gets past the first page of the group ...
      const restarted = await client.list(token, { locationUid: location, since: instant, limit: 100 });
      expect(uidsOf([restarted.page])).toEqual(uidsOf([first.page]));
      // ... and moving since past it skips the rest of the group.
      const past = new Date(Date.parse(instant) + 1).toISOString();
      const skipped = await client.listAll(token, { locationUid: location, since: past, limit: 100 });
      const missed = group.filter((u) => !uidsOf([first.page]).includes(u) && !uidsOf(skipped).includes(u));
      expect(missed.length).toBe(size - uidsOf([first.page]).length);
      expect(missed.length).toBeGreaterThan(0);
      // Following the cursor returns the whole group.
      const followed = await client.listAll(token, { locationUid: location, since: instant, limit: 100 });
      expect(uidsOf(followed).filter((u) => group.includes(u))).toEqual(group);
    });
  });

  describe('the limit parameter (4.3 query table, section 8)', () => {
    it('defaults to 10 items per page', async () => {
      const reply = await client.list(token, { locationUid: location });
      expect(reply.status).toBe(200);
      // Unrepresentable calls may be omitted, so at most 10.
      expect(reply.page.data.length).toBeLessThanOrEqual(10);
      const withCursor = await client.listAll(token, { locationUid: location, limit: 10 });
      expect(withCursor.every((p) => p.data.length <= 10)).toBe(true);
    });

    it('accepts 0 to 100 and rejects anything else with 400 invalid_request', async () => {
      for (const limit of ['101', '-1', '1.5', 'ten', '']) {
        const reply = await client.list(token, { locationUid: location, limit });
        expect(reply.status, `limit=${limit}`).toBe(400);
        expect(reply.json).toMatchObject({ error: { code: 'invalid_request' } });
      }
      const hundred = await client.list(token, { locationUid: location, limit: 100 });
      expect(hundred.status).toBe(200);
      expect(hundred.page.data.length).toBeLessThanOrEqual(100);
    });

    it('returns no items with limit=0 and a cursor that resumes at the same place', async () => {
      const zero = await client.list(token, { locationUid: location, limit: 0 });
      expect(zero.status).toBe(200);
      expect(zero.page.data).toEqual([]);
      const cursor = zero.page.metadata.nextCursor as string;
      expect(cursor).toEqual(expect.any(String));
      const next = await client.list(token, { cursor, limit: 10 });
      const direct = await client.list(token, { locationUid: location, limit: 10 });
      expect(uidsOf([next.page])).toEqual(uidsOf([direct.page]));
    });

    it('returns null nextCursor with limit=0 when nothing follows', async () => {
      const reply = await client.list(token, {
        locationUid: location,
        since: '2100-01-01T00:00:00Z',
        limit: 0,
      });
      expect(reply.page).toEqual({ data: [], metadata: { nextCursor: null } });
    });
  });

  describe('rule 9: calls from third-party integrations are never listed', () => {
    it('omits third-party calls from every page though GET /v4/calls/{uid} knows them', async () => {
      const call = sandbox.admin.upsertCall({ locationUid: location, thirdParty: true });
      const pages = await client.listAll(token, { locationUid: location, limit: 100 });
      expect(uidsOf(pages)).not.toContain(call.uid);
      expect(uidsOf(pages).length).toBe(sandbox.admin.truth(location).length);
      const single = await client.get(`/v4/calls/${call.uid}`, token);
      expect(single.status).toBe(200);
    });
  });

  describe('rule 10: listed items carry the fields of 2.3 with their nulls', () => {
    it('lists exactly the 2.3 fields with startedAt, endedAt, isPrivate and conversationUid null', async () => {
      const reply = await client.list(token, { locationUid: location, limit: 50 });
      expect(reply.page.data.length).toBeGreaterThan(0);
      for (const item of reply.page.data) {
        expect(Object.keys(item).sort()).toEqual(LISTED_KEYS);
        expect(item).toMatchObject({
          startedAt: null,
          endedAt: null,
          isPrivate: null,
          conversationUid: null,
        });
        expect(item.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(item.locationPhoneNumber).toEqual(expect.any(String));
        expect(item.customerPhoneNumber).toEqual(expect.any(String));
      }
    });

    it('returns real values for those fields from GET /v4/calls/{uid}', async () => {
      const listed = await client.list(token, { locationUid: location, limit: 5 });
      for (const item of listed.page.data) {
        const reply = await client.get(`/v4/calls/${String(item.uid)}`, token);
        expect(reply.status).toBe(200);
        const call = (reply.json as { data: SandboxCall }).data;
        expect(call.startedAt).toMatch(/Z$/);
        expect(call.endedAt).toMatch(/Z$/);
        expect(typeof call.isPrivate).toBe('boolean');
        expect(call.conversationUid).toEqual(expect.any(String));
        expect(call).toEqual(truth.find((c) => c.uid === item.uid));
      }
    });

    it('answers 404 not_found for an unknown uid', async () => {
      const reply = await client.get('/v4/calls/00000000-0000-4000-8000-000000000000', token);
      expect(reply.status).toBe(404);
      expect(reply.json).toMatchObject({ error: { code: 'not_found' } });
    });
  });
});

describe('GET /v4/calls with data that changes (spec 4.3 rules 6, 7, 8)', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;
  let token: string;

  beforeAll(async () => {
    sandbox = await startSandbox({
      data: {
        seed: 5,
        locations: 3,
        callsPerLocation: 120,
        thirdPartyRatio: 0,
        unrepresentableRatio: 0,
        sameInstantGroups: { count: 0, size: 0 },
      },
    });
    client = new SandboxTestClient(sandbox);
    token = sandbox.issueTokens().accessToken;
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('rule 6: omits unrepresentable calls, so a page holds fewer items than limit while nextCursor is set', async () => {
    const location = sandbox.locations[0] as string;
    const before = sandbox.admin.truth(location);
    // Make three calls of the first page unrepresentable (in place: same updatedAt).
    const hidden = before
      .slice(2, 5)
      .map((c) => sandbox.admin.upsertCall({ uid: c.uid, updatedAt: c.updatedAt, representable: false }).uid);
    const first = await client.list(token, { locationUid: location, limit: 10 });
    expect(first.page.data.length).toBe(7);
    expect(first.page.metadata.nextCursor).not.toBeNull();
    const pages = await client.listAll(token, { locationUid: location, limit: 10 });
    const uids = uidsOf(pages);
    for (const uid of hidden) expect(uids).not.toContain(uid);
    expect(uids).toEqual(before.map((c) => c.uid).filter((u) => !hidden.includes(u)));
  });

  it('rule 6: a page can be empty while nextCursor is set, and following it still reaches the rest', async () => {
    const location = sandbox.locations[1] as string;
    const before = sandbox.admin.truth(location);
    for (const c of before.slice(0, 10))
      sandbox.admin.upsertCall({ uid: c.uid, updatedAt: c.updatedAt, representable: false });
    const first = await client.list(token, { locationUid: location, limit: 10 });
    expect(first.page.data).toEqual([]);
    expect(first.page.metadata.nextCursor).not.toBeNull();
    const pages = await client.listAll(token, { locationUid: location, limit: 10 });
    expect(uidsOf(pages)).toEqual(before.slice(10).map((c) => c.uid));
  });

  it('rule 7: asc resumes where it stopped: records updated during the traversal move to its end, none lost', async () => {
    const location = sandbox.locations[2] as string;
    const before = sandbox.admin.truth(location).map((c) => c.uid);
    const first = await client.list(token, { locationUid: location, limit: 20 });
    const seenEarly = before[3] as string;
    const notYetSeen = before[60] as string;
    sandbox.admin.upsertCall({ uid: seenEarly });
    sandbox.admin.upsertCall({ uid: notYetSeen });
    const rest = await client.listAll(token, { cursor: first.page.metadata.nextCursor as string, limit: 20 });
    const uids = uidsOf([first.page, ...rest]);
    expect(new Set(uids)).toEqual(new Set(before));
    expect(uids.slice(-2)).toEqual(expect.arrayContaining([seenEarly, notYetSeen]));
    expect(uids.filter((u) => u === notYetSeen)).toHaveLength(1);
  });

  it('rule 8: desc is unsafe: a record updated during the traversal lands at the front and shifts every later page', async () => {
    const location = sandbox.locations[0] as string;
    const descending = sandbox.admin
      .truth(location)
      .map((c) => c.uid)
      .reverse();
    const first = await client.list(token, { locationUid: location, order: 'desc', limit: 10 });
    expect(uidsOf([first.page])).toEqual(descending.slice(0, 10));
    const later = descending[50] as string;
    sandbox.admin.upsertCall({ uid: later });
    const rest = await client.listAll(token, { cursor: first.page.metadata.nextCursor as string, limit: 10 });
    const uids = uidsOf([first.page, ...rest]);
    // The last record of page 1 shows up again on page 2, and the updated record is never seen.
    expect(uidsOf([rest[0] as ListPage])[0]).toBe(descending[9]);
    expect(uids).not.toContain(later);
  });
});
