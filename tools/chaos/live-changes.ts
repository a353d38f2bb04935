/**
 * The live-change writer: before the connector starts, every version the sandbox holds is the start of the
 * run's history (history.jsonl); then, all through the fault phase, updates (privacy flips, new customer
 * numbers, new conversations) and creations (some third-party or unrepresentable, which must never be
 * published) go through the sandbox admin API at the profile's rates, and each new version is appended to
 * the history, so the checker knows each published version's truth. It also keeps when each location had
 * live changes: which locations a fault's freshness check expects to move.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import type { Change } from './freshness.js';
import type { TruthCall } from './judge.js';
import { sleep } from './processes.js';
import type { Random } from './random.js';
import type { SandboxAdmin } from './sandbox-admin.js';
import type { Profile } from './schedule.js';

export interface LiveChangeSettings {
  admin: Pick<SandboxAdmin, 'call'>;
  historyFile: string;
  locations: readonly string[];
  profile: Pick<Profile, 'liveUpdatesPerSecond' | 'liveCreatesPerSecond'>;
  say: (message: string) => void;
  /** True once the run ends its background work (failure, Ctrl-C). */
  stopped: () => boolean;
}

export class LiveChanges {
  /** When each location had live changes (epoch ms); none recorded once settling began. */
  readonly changedAt = new Map<string, number[]>();
  /** Every version made during the fault phase, with when the driver asked for it: the freshness rule's input. */
  readonly changes: Change[] = [];
  initialCalls = 0;
  updates = 0;
  creates = 0;
  private readonly current = new Map<string, { locationUid: string; isPrivate: boolean }>();
  private settling = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly settings: LiveChangeSettings) {}

  /** Every version the sandbox holds before the connector starts: the first lines of the history. */
  async snapshot(): Promise<void> {
    const { admin, historyFile, locations } = this.settings;
    writeFileSync(historyFile, '');
    for (const location of locations) {
      const { data } = await admin.call<{ data: TruthCall[] }>(
        'GET',
        `truth?locationUid=${encodeURIComponent(location)}`,
      );
      appendFileSync(historyFile, data.map((c) => `${JSON.stringify(c)}\n`).join(''));
      for (const c of data) this.current.set(c.uid, { locationUid: location, isPrivate: c.isPrivate });
      this.initialCalls += data.length;
    }
    this.settings.say(`truth snapshot: ${this.initialCalls} listable calls`);
  }

  /** Starts writing live changes; resolves when they stopped (settling, or the run's end). */
  start(random: Random): Promise<void> {
    this.writing = this.loop(random);
    return this.writing;
  }

  /** Settling: no more live changes (the last one in flight still lands). */
  stop(): void {
    this.settling = true;
  }

  /** Resolves once the last live change was written (settling reads the truth after it). */
  get done(): Promise<void> {
    return this.writing;
  }

  private async loop(random: Random): Promise<void> {
    const { admin, locations, profile } = this.settings;
    const { liveUpdatesPerSecond: ups, liveCreatesPerSecond: cps } = profile;
    let updateDebt = 0;
    let createDebt = 0;
    let last = Date.now();
    const uids = [...this.current.keys()];
    while (!this.settings.stopped() && !this.settling) {
      await sleep(200);
      const now = Date.now();
      updateDebt += ((now - last) / 1000) * ups;
      createDebt += ((now - last) / 1000) * cps;
      last = now;
      try {
        for (; updateDebt >= 1 && !this.settling; updateDebt--) {
          const uid = random.pick(uids);
          const current = this.current.get(uid);
          const change = random.pick(['privacy', 'number', 'conversation', 'touch'] as const);
          const body: Record<string, unknown> = { uid };
          if (change === 'privacy') body.isPrivate = !(current?.isPrivate ?? false);
          if (change === 'number')
            body.customerPhoneNumber = `+1555${String(random.int(0, 9_999_999)).padStart(7, '0')}`;
          if (change === 'conversation')
            body.conversationUid = random.chance(0.2) ? null : randomUuid(random);
          const madeAt = Date.now();
          this.record((await admin.call<{ data: TruthCall }>('POST', 'calls', body)).data, madeAt);
          this.updates++;
        }
        for (; createDebt >= 1 && !this.settling; createDebt--) {
          const locationUid = random.pick(locations);
          const kind = random.next();
          const body: Record<string, unknown> = {
            locationUid,
            uid: randomUuid(random),
            customerPhoneNumber: `+1555${String(random.int(0, 9_999_999)).padStart(7, '0')}`,
            isPrivate: random.chance(0.3),
            conversationUid: randomUuid(random),
            ...(kind < 0.05 ? { thirdParty: true } : kind < 0.08 ? { representable: false } : {}),
          };
          const madeAt = Date.now();
          const created = (await admin.call<{ data: TruthCall }>('POST', 'calls', body)).data;
          if (kind >= 0.08) {
            this.record(created, madeAt);
            uids.push(created.uid);
          }
          this.creates++;
        }
      } catch (error) {
        this.settings.say(`live change failed: ${String(error)}`);
      }
    }
  }

  /**
   * A bulk import a fault made (a same-instant group, sandbox POST calls/import), asked for at `madeAt`: its
   * calls are versions like any other (history, freshness); they are not picked for later live updates.
   */
  imported(calls: readonly TruthCall[], madeAt: number): void {
    for (const call of calls) this.record(call, madeAt);
  }

  private record(call: TruthCall, madeAt: number): void {
    this.current.set(call.uid, { locationUid: call.locationUid, isPrivate: call.isPrivate });
    if (!this.settling) {
      const times = this.changedAt.get(call.locationUid) ?? [];
      times.push(Date.now());
      this.changedAt.set(call.locationUid, times);
      this.changes.push({
        uid: call.uid,
        locationUid: call.locationUid,
        updatedAtMs: Date.parse(call.updatedAt),
        madeAtMs: madeAt,
      });
    }
    appendFileSync(this.settings.historyFile, `${JSON.stringify(call)}\n`);
  }
}

function randomUuid(random: Random): string {
  const hex = Array.from({ length: 32 }, () => random.int(0, 15).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
