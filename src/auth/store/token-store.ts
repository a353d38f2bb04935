/**
 * The token store: grants (token pairs) and pending authorization states, encrypted entry by entry
 * (see encryption.ts) over a backend that only moves opaque bytes (file or compacted Kafka topic).
 *
 * Entry names: `grant:<grant name>` and `state:<sha256 of the state>` (the state itself is not a name, so
 * a listing of the store does not reveal live states). Values are sealed JSON.
 *
 * Contract for callers: `writeGrant` resolves only once the record is durable (fsync + rename, or acks=all),
 * which is what lets the token manager store a rotated refresh token before it hands out the new access token.
 *
 * Replay defence: every write seals its entry at a generation one above every generation in the store (in
 * the plaintext and, through encryption.ts, in the AAD), and records it in `meta:generations`, a sealed map
 * of entry name to its latest generation. An entry older than the highest generation seen for its name (in
 * that map, or by this process) is refused (AUTH_STORE_REPLAYED): restoring an old copy of one entry cannot
 * bring back a retired refresh token or an unused `state`. Restoring the whole store (map included) from an
 * old copy is only caught within a running process: writes to the store must be limited to the connector's
 * principal (see docs/security.md).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConnectorError, FatalError } from '../../errors/index.js';
import { sealedGeneration, type StoreKey } from './encryption.js';

/** Moves sealed entries; knows nothing of their content. */
export interface EntryBackend {
  /** Human-readable location for messages (file path or topic), never secret. */
  readonly description: string;
  /** Every entry as last written, read afresh (the file re-read; the topic read to its end). */
  readAll(): Promise<ReadonlyMap<string, Buffer>>;
  /**
   * Reads the current entries, asks `mutate` for changes (Buffer = put, null = delete) and applies them
   * durably. The file backend holds a lock across read and write; the Kafka backend cannot (see
   * kafka/token-store/token-topic-backend.ts).
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
  /** The PKCE verifier of the authorization request (absent in states written before PKCE). */
  codeVerifier: z.string().optional(),
});
export type PendingAuthorization = z.infer<typeof pendingSchema>;

export type StateCheck =
  | { status: 'accepted'; pending: PendingAuthorization }
  | { status: 'unknown' }
  | { status: 'expired' }
  | { status: 'reused' };

/** The entry holding the latest generation of every entry. */
const GENERATIONS_ENTRY = 'meta:generations';
const generationsSchema = z.record(z.string(), z.number().int().nonnegative());

/** How long a used or expired state marker is kept so that a replay is reported as such. */
const USED_MARKER_RETENTION_MS = 24 * 3600_000;

export class TokenStore {
  /** Highest generation this process has seen per entry name. */
  readonly #highest = new Map<string, number>();

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
    return sealed === undefined
      ? undefined
      : this.decode(grantEntry(grant), sealed, grantRecordSchema, entries);
  }

  /** Durable when resolved. */
  async writeGrant(record: GrantRecord): Promise<void> {
    const name = grantEntry(record.grant);
    const value = grantRecordSchema.parse(record);
    await this.backend.update((current) => ({
      changes: this.sealed(current, new Map([[name, value]])),
      result: undefined,
    }));
  }

  async listGrants(): Promise<string[]> {
    const entries = await this.backend.readAll();
    return [...entries.keys()].filter((k) => k.startsWith('grant:')).map((k) => k.slice('grant:'.length));
  }

  /** Remembers a state issued in an authorization URL; drops markers that have outlived their use. */
  async rememberState(state: string, pending: PendingAuthorization): Promise<void> {
    const name = stateEntry(state);
    const value = pendingSchema.parse(pending);
    await this.backend.update((current) => {
      const changes = new Map<string, object | null>([[name, value]]);
      for (const [entry, sealed] of current) {
        if (!entry.startsWith('state:') || entry === name) continue;
        const old = this.tryDecode(entry, sealed, pendingSchema, current);
        if (
          old === undefined ||
          pending.createdAt > Math.max(old.expiresAt, old.usedAt ?? 0) + USED_MARKER_RETENTION_MS
        ) {
          changes.set(entry, null);
        }
      }
      return { changes: this.sealed(current, changes), result: undefined };
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
      const pending = this.decode(name, sealed, pendingSchema, current);
      if (pending.usedAt !== undefined) return { changes: none, result: { status: 'reused' } };
      const changes = this.sealed(current, new Map([[name, { ...pending, usedAt: now }]]));
      if (now > pending.expiresAt) return { changes, result: { status: 'expired' } };
      return { changes, result: { status: 'accepted', pending } };
    });
  }

  async close(): Promise<void> {
    await this.backend.close();
  }

  /**
   * Seals `values` (null = delete) at the next generation, one above every generation in the store and
   * every one this process saw, and adds the updated `meta:generations` entry to the changes. The process
   * learns the new generations when it next reads the entries (a failed write must not raise them).
   */
  private sealed(
    current: ReadonlyMap<string, Buffer>,
    values: ReadonlyMap<string, object | null>,
  ): Map<string, Buffer | null> {
    let highest = Math.max(0, ...this.#highest.values());
    for (const sealed of current.values()) highest = Math.max(highest, sealedGeneration(sealed) ?? 0);
    const generation = highest + 1;
    const generations = { ...this.generationsForWrite(current) };
    const changes = new Map<string, Buffer | null>();
    for (const [name, value] of values) {
      if (value === null) {
        changes.set(name, null);
        delete generations[name];
        continue;
      }
      const plaintext = Buffer.from(JSON.stringify({ ...value, generation }), 'utf8');
      changes.set(name, this.key.seal(name, plaintext, generation));
      generations[name] = generation;
    }
    const map = Buffer.from(JSON.stringify(generations), 'utf8');
    changes.set(GENERATIONS_ENTRY, this.key.seal(GENERATIONS_ENTRY, map, generation));
    return changes;
  }

  /** The stored map of latest generations (empty for a store written before generations existed). */
  private generations(current: ReadonlyMap<string, Buffer>): Record<string, number> {
    const sealed = current.get(GENERATIONS_ENTRY);
    if (sealed === undefined) return {};
    return this.decode(GENERATIONS_ENTRY, sealed, generationsSchema, new Map());
  }

  /**
   * The map a write updates. A map sealed with another key is started anew: the key was replaced (lost, or
   * rotated: docs/oauth.md), and `auth login` with the new key must be able to store its grant, as that error's
   * hint says. The new generation is still above every one in the store (read in the clear), and reads of entries
   * sealed with the old key keep failing with AUTH_STORE_KEY_MISMATCH until they are replaced.
   */
  private generationsForWrite(current: ReadonlyMap<string, Buffer>): Record<string, number> {
    try {
      return this.generations(current);
    } catch (error) {
      if (error instanceof ConnectorError && error.code === 'AUTH_STORE_KEY_MISMATCH') return {};
      throw error;
    }
  }

  private decode<T>(
    name: string,
    sealed: Buffer,
    schema: z.ZodType<T>,
    entries: ReadonlyMap<string, Buffer>,
  ): T {
    const { plaintext, generation } = this.key.openWithGeneration(name, sealed);
    const latest = Math.max(
      this.#highest.get(name) ?? 0,
      name === GENERATIONS_ENTRY ? 0 : (this.generations(entries)[name] ?? 0),
    );
    if (generation < latest) {
      throw new FatalError(
        'AUTH_STORE_REPLAYED',
        `token-store entry "${name}" in ${this.description} is an old copy (generation ${generation}, ` +
          `latest ${latest}): someone restored or re-published it; run \`calls-connector auth login\` again ` +
          'and check who can write the token store',
      );
    }
    this.#highest.set(name, generation);
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
    const claimed =
      typeof parsed === 'object' && parsed !== null && 'generation' in parsed ? parsed.generation : 0;
    if (name !== GENERATIONS_ENTRY && claimed !== generation) {
      throw new FatalError(
        'AUTH_STORE_TAMPERED',
        `token-store entry "${name}" in ${this.description} names another generation than it was sealed at`,
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
  private tryDecode<T>(
    name: string,
    sealed: Buffer,
    schema: z.ZodType<T>,
    entries: ReadonlyMap<string, Buffer>,
  ): T | undefined {
    try {
      return this.decode(name, sealed, schema, entries);
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
