/**
 * What the sinks publish, told to the webhook side: a RecordSink decorator (the sync core knows nothing of
 * webhooks) that, once a page is stored, reports its calls to `PublishedCalls`: the uid index learns which
 * location each uid was published for (uid-locations.ts), the ledger times announced changes and counts the
 * unannounced ones (delivery-ledger.ts). Only a 'stored' outcome reports: a rejected page published nothing
 * visible, a superseded one is another writer's. Reporting never fails the commit.
 */
import type { CommitOutcome, PageCommit, RecordSink } from '../sync/ports.js';
import type { DeliveryLedger } from './delivery-ledger.js';
import type { UidLocationIndex } from './uid-locations.js';

export interface PublishedCalls {
  /** `calls` of `locationUid` are now durable in Kafka. */
  published(locationUid: string, calls: ReadonlyArray<{ uid: string; updatedAt: string }>): void;
}

/** The index and the ledger fed from one report. */
export function publishedCallsFeed(
  index: Pick<UidLocationIndex, 'recordPublished'>,
  ledger: Pick<DeliveryLedger, 'published'> | null,
): PublishedCalls {
  return {
    published: (locationUid, calls) => {
      for (const call of calls) {
        index.recordPublished(call.uid, locationUid);
        ledger?.published(call.uid, Date.parse(call.updatedAt));
      }
    },
  };
}

/** `sink`, reporting the calls of each stored page to `report`. */
export function reportingPublished(sink: RecordSink, report: PublishedCalls): RecordSink {
  const decorated: RecordSink = {
    commitPage: async (commit: PageCommit): Promise<CommitOutcome> => {
      const outcome = await sink.commitPage(commit);
      if (outcome.kind === 'stored' && commit.calls.length > 0)
        report.published(commit.locationUid, commit.calls);
      return outcome;
    },
    close: () => sink.close(),
  };
  // Only a sink that has generations gets one: a page built on none carries none (RecordSink.generation).
  if (sink.generation !== undefined) decorated.generation = () => sink.generation?.() ?? 0;
  return decorated;
}
