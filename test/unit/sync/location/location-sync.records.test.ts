/**
 * LocationSync: what a page publishes (enrichment, privacy, tombstones, dead letters).
 */
import { describe, expect, it } from 'vitest';
import { RetriableError, SkippableError } from '../../../../src/errors/index.js';
import { EMPTY_OFFSET } from '../../../../src/sync/model.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';
import { build, call, LOC, metricValue, t } from '../../../support/sync/location-sync-fixture.js';

describe('LocationSync records', () => {
  it('redacts private and unknown numbers and publishes public ones', async () => {
    const api = new FakeCallsApi([
      call('pub', 1, { isPrivate: false }),
      call('priv', 2, { isPrivate: true }),
      call('gone', 3),
    ]);
    api.gone.add('gone');
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    const byUid = new Map(sink.calls.map((c) => [c.uid, c]));
    expect(byUid.get('pub')).toMatchObject({
      customerPhoneNumber: '+1555pub',
      enriched: true,
      isPrivate: false,
      conversationUid: 'conv-pub',
    });
    expect(byUid.get('priv')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      isPrivate: true,
    });
    expect(byUid.get('gone')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      enriched: false,
    });
    expect(await metricValue(metrics, 'calls_connector_records_redacted_total')).toBe(2);
    expect(await metricValue(metrics, 'calls_connector_records_skipped_total', { reason: 'redacted' })).toBe(
      0,
    );
  });

  it('publishes a call whose single call is refused (4xx) unenriched and redacted, and counts it', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false }), call('b', 2, { isPrivate: false })]);
    api.getErrors.set('a', [new SkippableError('API_CALL_REFUSED', 'HTTP 403: not yours')]);
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => [c.uid, c.enriched, c.customerPhoneNumber])).toEqual([
      ['a', false, null],
      ['b', true, '+1555b'],
    ]);
    expect(sink.deadLetters).toEqual([]);
    expect(
      await metricValue(metrics, 'calls_connector_records_unenriched_total', { reason: 'refused' }),
    ).toBe(1);
  });

  it('fails the page on a transient single-call failure, then publishes the call enriched from the same offset', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false }), call('b', 2, { isPrivate: false })]);
    api.getErrors.set('b', [new RetriableError('API_MALFORMED_BODY', 'garbled 3 times')]);
    const { sync, sink } = build(api);
    await expect(sync.runPage()).rejects.toMatchObject({ code: 'API_MALFORMED_BODY' });
    expect(sink.calls).toEqual([]);
    expect(sink.deadLetters).toEqual([]);
    expect(sync.offset).toEqual(EMPTY_OFFSET);
    await runTraversal(sync);
    expect(sink.calls.map((c) => [c.uid, c.enriched, c.customerPhoneNumber])).toEqual([
      ['a', true, '+1555a'],
      ['b', true, '+1555b'],
    ]);
  });

  it('publishes the listed version unenriched when the single call is another version, never a mix', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false })]);
    api.getUpdatedAt.set('a', t(9));
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls).toEqual([
      expect.objectContaining({
        uid: 'a',
        updatedAt: t(1),
        enriched: false,
        isPrivate: null,
        conversationUid: null,
        startedAt: null,
        customerPhoneNumber: null,
      }),
    ]);
    expect(
      await metricValue(metrics, 'calls_connector_records_unenriched_total', { reason: 'version_mismatch' }),
    ).toBe(1);
  });

  it('publishes a tombstone instead of the unenriched record for a call GET reports gone, when configured', async () => {
    const api = new FakeCallsApi([call('kept', 1), call('gone', 2), call('kept2', 3)]);
    api.gone.add('gone');
    const { sync, sink } = build(api, { settings: { tombstoneGone: true } });
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['kept', 'kept2']);
    expect(sink.tombstones).toEqual(['gone']);
    expect(sink.offsets.get(LOC)?.watermark).toBe(t(3));
  });

  it('redacts every number and requests no single call when enrichment is off', async () => {
    const api = new FakeCallsApi([call('pub', 1, { isPrivate: false })]);
    const { sync, sink } = build(api, { enrich: false });
    await runTraversal(sync);
    expect(sink.calls[0]).toMatchObject({ customerPhoneNumber: null, enriched: false });
    expect(api.gets).toEqual([]);
  });

  it('dead-letters unmappable items with the page and goes on', async () => {
    const api = new FakeCallsApi([
      call('a', 1),
      call('x', 2, { raw: { updatedAt: t(2) } }),
      call('y', 3, { raw: { uid: 'y', updatedAt: t(3), isPrivate: 'maybe', customerPhoneNumber: '+1999' } }),
      call('b', 4),
    ]);
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b']);
    expect(sink.deadLetters.map((d) => d.code).sort()).toEqual(['ITEM_NO_UID', 'ITEM_SCHEMA_REJECTED']);
    expect(sink.deadLetters.every((d) => !d.payload.includes('+1999'))).toBe(true);
    expect(await metricValue(metrics, 'calls_connector_records_skipped_total', { reason: 'dlq' })).toBe(2);
  });

  it('dead-letters hostile items (10,000-deep nesting, a megabyte uid) and goes on, keyed by uid when usable', async () => {
    let deep: unknown[] = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const api = new FakeCallsApi([
      call('a', 1),
      call('n', 2, { raw: { uid: 'n', updatedAt: t(2), locationPhoneNumber: deep } }),
      call('u', 3, { raw: { uid: 'u'.repeat(1_000_000), updatedAt: t(3) } }),
      call('b', 4),
    ]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b']);
    expect(sink.deadLetters.map((d) => [d.code, d.uid])).toEqual([
      ['ITEM_SCHEMA_REJECTED', 'n'],
      ['ITEM_UID_TOO_LONG', null],
    ]);
    for (const dead of sink.deadLetters)
      expect(dead.payload.length + dead.message.length).toBeLessThan(4_000);
  });

  it('does not dead-letter a rejected item twice at the boundary', async () => {
    const api = new FakeCallsApi([call('y', 3, { raw: { uid: 'y', updatedAt: t(3), isPrivate: 'maybe' } })]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    await runTraversal(sync);
    expect(sink.deadLetters).toHaveLength(1);
  });
});
