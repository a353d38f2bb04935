/**
 * What tests, the demo and the admin endpoint may do to a running sandbox. Its own module so that the
 * HTTP router and the admin routes can depend on it without importing the sandbox's entry point.
 */
import type { SandboxStats } from '../context.js';
import type { SandboxCall } from '../data/call-record.js';
import type { BulkImportInput, UpsertCallInput } from '../data/store.js';
import type { FaultSettings } from '../faults/faults.js';
import type { LiveRates } from '../live.js';
import type { SandboxWebhooks } from '../webhooks/dispatcher.js';

export interface SandboxAdmin {
  /**
   * Ground truth: every call the listing must return for this location (not third-party, representable),
   * ascending by (updatedAt, uid), with the single-call fields.
   */
  truth(locationUid: string): SandboxCall[];
  /** Adds a call, or updates one (by uid); updatedAt defaults to the sandbox clock's now. */
  upsertCall(input: UpsertCallInput): SandboxCall;
  /** Creates `count` calls of one location at one instant (default now): a bulk import. */
  bulkImport(input: BulkImportInput): { count: number; updatedAt: string };
  /** Moves the sandbox clock forward (token, code and cursor expiry; updatedAt of later writes). */
  advanceClock(ms: number): void;
  now(): Date;
  /** Revokes every token issued so far (both kinds unless told otherwise). */
  revokeTokens(opts?: { accessTokens?: boolean; refreshTokens?: boolean }): void;
  /** Changes some fault settings; the others keep their values. */
  setFaults(faults: Partial<FaultSettings>): void;
  faults(): FaultSettings;
  /** A snapshot of the counters. */
  stats(): SandboxStats;
  /** Starts, changes or (with false) stops live mode. */
  setLive(rates: LiveRates | false): void;
  /** Mints a token pair without the browser flow; default scopes [read_phones], all locations. */
  issueTokens(opts?: { scopes?: string[]; locations?: string[] }): {
    accessToken: string;
    refreshToken: string;
  };
  /** The call.* webhooks: targets, secret, faults, what was sent (webhooks/dispatcher.ts). */
  webhooks: SandboxWebhooks;
}
