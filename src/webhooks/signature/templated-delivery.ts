/**
 * What a templated signature scheme (HMAC or ed25519 over a template, template.ts) reads from one delivery:
 * the signatures in the signature header, its timestamp and id, and the signed bytes; and the verdict on them
 * (`verifyTemplated`). Shared by hmac-scheme.ts and ed25519-scheme.ts, which differ only in how a signature is
 * checked.
 *
 * The signature header holds entries separated by commas or spaces: signatures (after `prefix`; several
 * while the sender rotates its secret) and `NAME=value` fields (Stripe's `t=…,v1=…,v1=…`), which the
 * template and `timestampField` can read. Pure.
 */
import { createHash } from 'node:crypto';
import {
  legacyTemplate,
  parseTemplate,
  renderTemplate,
  templateCoverage,
  type TemplatePart,
  type TemplateSources,
} from './template.js';
import {
  headerValue,
  refuse,
  signedContentKey,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

export interface TemplateScheme extends TemplateSources {
  /** Header that carries the signature(s), lower case, e.g. `x-hub-signature-256`. */
  header: string;
  encoding: 'hex' | 'base64';
  /** Before each signature, e.g. `sha256=`, `v1=`; '' for none. */
  prefix: string;
  /**
   * The signed content, e.g. `{body}`, `{timestamp}.{body}`, `v0:{timestamp}:{body}` (template.ts); the
   * words `body` and `timestamp.body` (timestamp, `separator`, body) are kept for older configurations.
   */
  signedContent: string;
  separator?: string | undefined;
  timestampUnit: 'seconds' | 'milliseconds';
  /** The origin the sender posts to (e.g. `https://hooks.example.com`), for `{url}`. */
  publicUrl?: string | undefined;
  /**
   * A query parameter of the URL that carries the hex SHA-256 of the body (Twilio's `bodySHA256`): with it
   * the URL is signed and the body is checked against the signed URL.
   */
  bodyHashParam?: string | undefined;
}

export interface TemplatedDelivery {
  /** The signed bytes as this delivery fills the template. */
  content: Buffer;
  /** The signatures the header carries, decoded (an entry not in the encoding decodes to nothing that matches). */
  signatures: Buffer[];
  timestampMs: number | null;
  /** The delivery id when the signature covers it; undefined otherwise (then it identifies nothing). */
  signedId: string | undefined;
}

const cache = new WeakMap<TemplateScheme, TemplatePart[]>();

function partsOf(scheme: TemplateScheme): TemplatePart[] {
  let parts = cache.get(scheme);
  if (parts === undefined) {
    parts = parseTemplate(legacyTemplate(scheme.signedContent, scheme.separator ?? '.'));
    cache.set(scheme, parts);
  }
  return parts;
}

/** What the signature covers (for the configuration's replay rule and the verdict's key). */
export function schemeCoverage(scheme: TemplateScheme): { timestamp: boolean; id: boolean } {
  return templateCoverage(partsOf(scheme), scheme);
}

export function readTemplated(
  scheme: TemplateScheme,
  delivery: SignedDelivery,
): TemplatedDelivery | Extract<SignatureVerdict, { ok: false }> {
  const header = headerValue(delivery.headers, scheme.header);
  if (header === undefined) {
    return delivery.headers[scheme.header] === undefined
      ? notOk('unsigned', `no ${scheme.header} header`)
      : notOk('bad_signature', `${scheme.header} sent more than once`);
  }
  const entries = header.split(/[\s,]+/).filter((entry) => entry !== '');
  const fields = new Map<string, string>();
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq > 0 && !fields.has(entry.slice(0, eq))) fields.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  const signatures = entries
    .filter((entry) => entry.startsWith(scheme.prefix) && entry.length > scheme.prefix.length)
    .map((entry) => decode(entry.slice(scheme.prefix.length), scheme.encoding))
    .filter((signature) => signature.length > 0);
  if (signatures.length === 0) return notOk('bad_signature', `no signature in ${scheme.header}`);

  let timestamp: string | undefined;
  let timestampMs: number | null = null;
  if (scheme.timestampHeader !== undefined || scheme.timestampField !== undefined) {
    timestamp =
      scheme.timestampField !== undefined
        ? fields.get(scheme.timestampField)
        : headerValue(delivery.headers, scheme.timestampHeader ?? '');
    if (timestamp === undefined || !/^\d{1,15}$/.test(timestamp))
      return notOk('bad_signature', 'the timestamp is missing or not a number');
    timestampMs = Number(timestamp) * (scheme.timestampUnit === 'seconds' ? 1000 : 1);
  }
  const id = scheme.idHeader === undefined ? undefined : headerValue(delivery.headers, scheme.idHeader);
  const target = delivery.target ?? '/';
  const url = scheme.publicUrl === undefined ? undefined : `${scheme.publicUrl.replace(/\/+$/, '')}${target}`;
  if (scheme.bodyHashParam !== undefined) {
    const declared = new URL(target, 'http://receiver').searchParams.get(scheme.bodyHashParam);
    const actual = createHash('sha256').update(delivery.body).digest('hex');
    if (declared === null || declared.toLowerCase() !== actual)
      return notOk('bad_signature', `the body does not match the URL's ${scheme.bodyHashParam}`);
  }
  const rendered = renderTemplate(partsOf(scheme), {
    body: delivery.body,
    timestamp,
    id,
    url,
    header: (name) => headerValue(delivery.headers, name),
    field: (name) => fields.get(name),
  });
  if ('missing' in rendered)
    return notOk('bad_signature', `the signed content lacks its ${rendered.missing}`);
  const signedId = schemeCoverage(scheme).id && id !== undefined && id !== '' ? id : undefined;
  return { content: rendered.bytes, signatures, timestampMs, signedId };
}

/**
 * The verdict on a templated delivery: `matches` checks its signatures against the signed content (first, so
 * `stale_timestamp` always means an authentic delivery); then the signed timestamp against the tolerance. The
 * replay key comes from signed material only: the id when the template covers it, else a digest of the signed
 * content (the same whichever of the sender's signatures or secrets matched).
 */
export function verifyTemplated(
  scheme: TemplateScheme,
  delivery: SignedDelivery,
  toleranceMs: number,
  matches: (content: Buffer, signatures: readonly Buffer[]) => boolean,
  /** What the keys are, for the refusal's detail: `secret` or `public key`. */
  keys: string,
): SignatureVerdict {
  const read = readTemplated(scheme, delivery);
  if ('ok' in read) return read;
  if (!matches(read.content, read.signatures))
    return refuse('bad_signature', `no signature matches an active ${keys}`);
  if (read.timestampMs !== null && !withinTolerance(read.timestampMs, delivery.nowMs, toleranceMs))
    return refuse('stale_timestamp', 'the signed timestamp is outside the tolerance');
  const replayKey = read.signedId !== undefined ? `id:${read.signedId}` : signedContentKey(read.content);
  return { ok: true, replayKey, timestampMs: read.timestampMs };
}

function notOk(
  reason: 'unsigned' | 'bad_signature',
  detail: string,
): Extract<SignatureVerdict, { ok: false }> {
  return refuse(reason, detail) as Extract<SignatureVerdict, { ok: false }>;
}

/** Decoded bytes; a value that is not in the encoding decodes to nothing (which matches nothing). */
function decode(text: string, encoding: 'hex' | 'base64'): Buffer {
  if (encoding === 'hex')
    return /^(?:[0-9a-fA-F]{2})+$/.test(text) ? Buffer.from(text, 'hex') : Buffer.alloc(0);
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0);
}
