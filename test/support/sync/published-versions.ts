/** What a sink published, per uid: the updatedAt of each version, in order. */
import type { InMemorySink } from './in-memory-sink.js';

export function publishedVersions(sink: InMemorySink): Map<string, string[]> {
  const byUid = new Map<string, string[]>();
  for (const c of sink.calls) byUid.set(c.uid, [...(byUid.get(c.uid) ?? []), c.updatedAt]);
  return byUid;
}
