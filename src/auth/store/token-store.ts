/**
 * The token store: grants (token pairs) and pending authorization states, encrypted entry by entry
 * (see encryption.ts) over a backend that only moves opaque bytes (file or compacted Kafka topic).
 *
 * Entry names: `grant:<grant name>` and `state:<sha256 of the state>` (the state itself is not a name, so
 * a listing of the store does not reveal live states). Values are sealed JSON.
 *
 * Contract for callers: `writeGrant` resolves only once the record is durable (fsync + rename, or acks=all),
 * which is what lets the token manager store a rotated refresh token before it hands out the new access token.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { FatalError } from '../../errors/index.js';
import type { StoreKey } from './encryption.js';

/** Moves sealed entries; knows nothing of their content. */
export interface EntryBackend {
  /** Human-readable location for messages (file path or topic), never secret. */
  readonly description: string;
  /** Every entry as last written, read afresh (the file re-read; the topic read to its end). */
  readAll(): Promise<ReadonlyMap<string, Buffer>>;
  /**
   * Reads the current entries, asks `mutate` for changes (Buffer = put, null = delete) and applies them
   * durably. The file backend holds a lock across read and write; the Kafka backend cannot (see kafka-backend.ts).
   * Returns what `mutate` returned besides the changes.
   */
  update<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T>;
  close(): Promise<void>;
}

const grantRecordSchema = z.object({
  grant: z.string(),
  clientId: z.string(),
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1),
  /** Epoch ms at which the access token stops working (10 h after issue unless the server says otherwise). */
  accessTokenExpiresAt: z.number(),
  /** Epoch ms of the token response that produced this record. */
  obtainedAt: z.number(),
  scopes: z.array(z.string()),
});
export type GrantRecord = z.infer<typeof grantRecordSchema>;

const pendingSchema = z.object({
  grant: z.string(),
  redirectUri: z.string(),
  scopes: z.array(z.string()),
  createdAt: z.number(),
  expiresAt: z.number(),
  /** Set once the state has been presented; a second presentation is a replay. */
  usedAt: z.number().optional(),
});
export type PendingAuthorization = z.infer<typeof pendingSchema>;

export type StateCheck =
  | { status: 'accepted'; pending: PendingAuthorization }
  | { status: 'unknown' }
  | { status: 'expired' }
  | { status: 'reused' };

/** How long a used or expired state marker is kept so that a replay is reported as such. */
const USED_MARKER_RETENTION_MS = 24 * 3600_000;

export class TokenStore {
  constructor(
    private readonly backend: EntryBackend,
    private readonly key: StoreKey,
  ) {}

  get description(): string {
    return this.backend.description;
  }

  async readGrant(grant: string): Promise<GrantRecord | undefined> {
    const entries = await this.backend.readAll();
    const sealed = entries.get(grantEntry(grant));
    return sealed === undefined ? undefined : this.decode(grantEntry(grant), sealed, grantRecordSchema);
  }

  /** Durable when resolved. */
  async writeGrant(record: GrantRecord): Promise<void> {
    const name = grantEntry(record.grant);
    const sealed = this.key.seal(name, Buffer.from(JSON.stringify(grantRecordSchema.parse(record)), 'utf8'));
    await this.backend.update(() => ({ changes: new Map([[name, sealed]]), result: undefined }));
  }

  async listGrants(): Promise<string[]> {
    const entries = await this.backend.readAll();
    return [...entries.keys()].filter((k) => k.startsWith('grant:')).map((k) => k.slice('grant:'.length));
  }

  /** Remembers a state issued in an authorization URL; drops markers that have outlived their use. */
  async rememberState(state: string, pending: PendingAuthorization): Promise<void> {
    const name = stateEntry(state);
    const sealed = this.key.seal(name, Buffer.from(JSON.stringify(pendingSchema.parse(pending)), 'utf8'));
    await this.backend.update((current) => {
      const changes = new Map<string, Buffer | null>([[name, sealed]]);
      for (const [entry, value] of current) {
        if (!entry.startsWith('state:') || entry === name) continue;
        const old = this.tryDecode(entry, value, pendingSchema);
        if (
          old === undefined ||
          pending.createdAt > Math.max(old.expiresAt, old.usedAt ?? 0) + USED_MARKER_RETENTION_MS
        ) {
          changes.set(entry, null);
        }
      }
      return { changes, result: undefined };
    });
  }

  /**
   * Checks a state presented with an authorization code (CSRF defence) and marks it used in the same
   * update, so a second presentation is refused as a replay. Only `accepted` may proceed to redemption.
   */
  async consumeState(state: string, now: number): Promise<StateCheck> {
    const name = stateEntry(state);
    return this.backend.update<StateCheck>((current) => {
      const sealed = current.get(name);
      const none = new Map<string, Buffer | null>();
      if (sealed === undefined) return { changes: none, result: { status: 'unknown' } };
      const pending = this.decode(name, sealed, pendingSchema);
      if (pending.usedAt !== undefined) return { changes: none, result: { status: 'reused' } };
      const used = { ...pending, usedAt: now };
      const changes = new Map<string, Buffer | null>([
        [name, this.key.seal(name, Buffer.from(JSON.stringify(used), 'utf8'))],
      ]);
      if (now > pending.expiresAt) return { changes, result: { status: 'expired' } };
      return { changes, result: { status: 'accepted', pending } };
    });
  }

  async close(): Promise<void> {
    await this.backend.close();
  }

  private decode<T>(name: string, sealed: Buffer, schema: z.ZodType<T>): T {
    const plaintext = this.key.open(name, sealed);
    let parsed: unknown;
    try {
      parsed = JSON.parse(plaintext.toString('utf8'));
    } catch (error) {
      throw new FatalError(
        'AUTH_STORE_CORRUPT',
        `token-store entry "${name}" in ${this.description} is not valid JSON`,
        { cause: error },
      );
    }
    const result = schema.safeParse(parsed);
    if (!result.success) {
      throw new FatalError(
        'AUTH_STORE_CORRUPT',
        `token-store entry "${name}" in ${this.description} has an unexpected shape`,
      );
    }
    return result.data;
  }

  /** Like decode, but undefined for an entry that cannot be read (used only when pruning). */
  private tryDecode<T>(name: string, sealed: Buffer, schema: z.ZodType<T>): T | undefined {
    try {
      return this.decode(name, sealed, schema);
    } catch {
      return undefined;
    }
  }
}

function grantEntry(grant: string): string {
  return `grant:${grant}`;
}

function stateEntry(state: string): string {
  return `state:${createHash('sha256').update(state, 'utf8').digest('hex')}`;
}
