import { describe, expect, it } from 'vitest';
import { Publications } from '../../../../tools/chaos/freshness.js';
import { webhookLines } from '../../../../tools/chaos/report.js';
import { webhookFigures } from '../../../../tools/chaos/webhook-figures.js';

describe('the chaos report, webhooks', () => {
  it('shows the forged requests accepted, the routes and the delivered p99 outside the fault windows', () => {
    const publications = new Publications();
    publications.add('a', 10_000, 10_400);
    const webhooks = webhookFigures({
      attempts: [
        {
          origin: 'sender',
          receivedAtMs: 10_010,
          answeredAtMs: 10_015,
          id: 'msg_a',
          uid: 'a',
          locationUid: 'loc-1',
          signed: true,
          process: 'connector-1',
          forwardedTo: 'connector-1',
          status: 202,
          outcome: 'accepted',
        },
      ],
      changes: [{ uid: 'a', locationUid: 'loc-1', madeAtMs: 10_000, updatedAtMs: 10_000 }],
      publications,
      faults: [],
      quietFromMs: 1000,
      sharedReplayWindow: true,
    });
    const text = webhookLines({ webhooks }).join('\n');
    expect(text).toContain('## Webhooks');
    expect(text).toContain('**0 accepted**');
    expect(text).toContain('**0 taken more than 1 s after the original by an instance that was reading');
    expect(text).toContain('| announced, outside fault windows | 1 | 0 | 0 | 0 | 0 |');
    expect(text).toMatch(/p50 0\.40 s, p99 0\.40 s, max 0\.40 s \(goal: p99 ≤ 2 s\)/);
  });

  it('has no webhooks section for a run that judged none', () => {
    expect(webhookLines({ webhooks: null })).toEqual([]);
  });
});
