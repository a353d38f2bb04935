/**
 * What the members of the configurations group (`<connector.name>-configurations`, configuration-peers.ts) tell
 * each other, and what one instance makes of it. Pure: plain data in, plain data out; no Kafka.
 *
 * Each member's protocol metadata carries, in its user data, the fingerprint of the sources its instance runs
 * (config/config-diff.ts `configurationFingerprint`) and a name for the instance (host, process id, start time:
 * nothing secret). After every completed join an instance reads every member's metadata (DescribeGroups) and
 * `configurationView` turns it into the view it reports: which fingerprints run on how many instances, and
 * whether they agree.
 */
import kafkajs from 'kafkajs';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { AssignerProtocol } = kafkajs;

/** The user data of one member's metadata. */
export interface PeerMetadata {
  /** The fingerprint of the sources the member's instance runs. */
  fingerprint: string;
  /** A name for the instance: `host:pid` and when it started (ISO 8601). */
  instance: string;
}

/** The version of `PeerMetadata`'s encoding; a member of a later version may add fields, never remove these. */
const PEER_METADATA_VERSION = 1;

export function encodePeerMetadata(metadata: PeerMetadata): Buffer {
  return Buffer.from(JSON.stringify({ v: PEER_METADATA_VERSION, ...metadata }));
}

/**
 * The peer metadata in a member's protocol metadata (DescribeGroups' `memberMetadata`, kafkajs's
 * MemberMetadata encoding); null when it carries none that can be read (empty, truncated, another client's).
 */
export function peerMetadataOf(memberMetadata: Buffer | null | undefined): PeerMetadata | null {
  if (memberMetadata === null || memberMetadata === undefined || memberMetadata.length === 0) return null;
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(memberMetadata)?.userData;
    if (userData === undefined || userData === null || userData.length === 0) return null;
    const parsed = JSON.parse(userData.toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { fingerprint, instance } = parsed as Record<string, unknown>;
    if (typeof fingerprint !== 'string' || fingerprint.length === 0) return null;
    return {
      fingerprint,
      instance: typeof instance === 'string' && instance.length > 0 ? instance : 'unnamed',
    };
  } catch {
    return null;
  }
}

/**
 * - agreed: every member runs this instance's fingerprint;
 * - differs: at least two fingerprints run (this instance's among them, or not);
 * - unknown: no view (before the first join was described, while the group cannot be reached), or members whose
 *   metadata cannot be read beside members that agree.
 */
export type AgreementState = 'agreed' | 'differs' | 'unknown';

/** One fingerprint and the instances that run it, as one instance sees the group. */
export interface FingerprintPeers {
  fingerprint: string;
  /** Instance names, sorted. */
  instances: string[];
}

export interface ConfigurationView {
  state: AgreementState;
  /** This instance's fingerprint. */
  fingerprint: string;
  /** Every fingerprint the group's members run, the most instances first (then by fingerprint); empty: unknown. */
  peers: FingerprintPeers[];
  /** Members whose metadata could not be read. */
  unreadable: number;
}

/** The view before any was described, or while the group cannot be reached. */
export function unknownView(fingerprint: string): ConfigurationView {
  return { state: 'unknown', fingerprint, peers: [], unreadable: 0 };
}

/**
 * The view of the group from `fingerprint`'s instance, given every member's metadata as DescribeGroups showed it
 * (this instance's own member included). Differs as soon as two readable fingerprints are seen, whatever else.
 */
export function configurationView(
  fingerprint: string,
  members: ReadonlyArray<{ memberMetadata: Buffer | null | undefined }>,
): ConfigurationView {
  const byFingerprint = new Map<string, string[]>();
  let unreadable = 0;
  for (const member of members) {
    const metadata = peerMetadataOf(member.memberMetadata);
    if (metadata === null) {
      unreadable += 1;
      continue;
    }
    const instances = byFingerprint.get(metadata.fingerprint) ?? [];
    instances.push(metadata.instance);
    byFingerprint.set(metadata.fingerprint, instances);
  }
  const peers = [...byFingerprint]
    .map(([print, instances]) => ({ fingerprint: print, instances: instances.sort() }))
    .sort(
      (a, b) =>
        b.instances.length - a.instances.length ||
        (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0),
    );
  const state: AgreementState =
    peers.length > 1 || (peers.length === 1 && peers[0]!.fingerprint !== fingerprint)
      ? 'differs'
      : peers.length === 1 && unreadable === 0
        ? 'agreed'
        : 'unknown';
  return { state, fingerprint, peers, unreadable };
}

/**
 * What a change of view is worth saying in the log: `warn` when it turns to differs (or the fingerprints it
 * differs on change), `info` when it turns to agreed from differs or unknown after a view; null when nothing
 * worth saying changed (the first agreed view, a view that stays agreed, a change of instance count alone).
 */
export function viewChange(
  before: ConfigurationView | null,
  after: ConfigurationView,
): { level: 'warn' | 'info'; message: string } | null {
  if (after.state === 'differs') {
    const prints = (v: ConfigurationView | null) =>
      v?.state === 'differs'
        ? v.peers
            .map((p) => p.fingerprint)
            .sort()
            .join(',')
        : '';
    if (prints(before) === prints(after)) return null;
    return {
      level: 'warn',
      message: `the instances of this connector run different configurations: ${describePeers(after)}; a location listed by some of them only is polled only when the owner of its partition lists it (docs/operations.md, "Instances that run different configurations")`,
    };
  }
  if (after.state === 'agreed' && before?.state === 'differs')
    return {
      level: 'info',
      message: `the instances of this connector run one configuration again (fingerprint ${after.fingerprint}, ${after.peers[0]?.instances.length ?? 0} instance(s))`,
    };
  return null;
}

/** `fingerprint (n: name, name)` for each fingerprint of the view, this instance's marked. */
export function describePeers(view: ConfigurationView): string {
  return view.peers
    .map(
      (p) =>
        `${p.fingerprint}${p.fingerprint === view.fingerprint ? ' (this instance)' : ''} on ${p.instances.length}: ${p.instances.join(', ')}`,
    )
    .join('; ');
}
