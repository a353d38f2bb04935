/**
 * The signed content of a delivery as a template: the bytes a sender signs, written as literal text and
 * placeholders, e.g. Stripe's `{timestamp}.{body}`, Slack's and Zoom's `v0:{timestamp}:{body}`, Standard
 * Webhooks' `{id}.{timestamp}.{body}`, Twilio's `{url}`. Placeholders:
 * - `{body}`: the raw body bytes, as received;
 * - `{timestamp}` / `{id}`: the delivery's timestamp and id, as sent (from a header or a signature-header field);
 * - `{url}`: the public URL the sender posted to (the configured public origin and the request target);
 * - `{header.NAME}`: a header's value; `{field.NAME}`: a `NAME=value` entry of the signature header.
 * Pure, shared by the configuration (which refuses a template it cannot read) and the verifiers.
 */

export type TemplatePart =
  | { kind: 'text'; text: string }
  | { kind: 'body' | 'timestamp' | 'id' | 'url' }
  | { kind: 'header' | 'field'; name: string };

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The parts of `template`; throws RangeError naming the first placeholder it does not know. */
export function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let at = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match.index > at) parts.push({ kind: 'text', text: template.slice(at, match.index) });
    at = match.index + match[0].length;
    const name = match[1] ?? '';
    if (name === 'body' || name === 'timestamp' || name === 'id' || name === 'url')
      parts.push({ kind: name });
    else if (/^header\.[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
      parts.push({ kind: 'header', name: name.slice('header.'.length).toLowerCase() });
    else if (/^field\.[^\s,=]+$/.test(name)) parts.push({ kind: 'field', name: name.slice('field.'.length) });
    else
      throw new RangeError(
        `unknown placeholder {${name}} (known: {body}, {timestamp}, {id}, {url}, {header.NAME}, {field.NAME})`,
      );
  }
  if (at < template.length) parts.push({ kind: 'text', text: template.slice(at) });
  if (/[{}]/.test(parts.flatMap((p) => (p.kind === 'text' ? [p.text] : [])).join('')))
    throw new RangeError('an unmatched { or } in the signed content');
  return parts;
}

/** Where a scheme reads the delivery's timestamp and id from (each a header, or a field of the signature header). */
export interface TemplateSources {
  timestampHeader?: string | undefined;
  timestampField?: string | undefined;
  idHeader?: string | undefined;
}

/**
 * Whether the signature covers the delivery's timestamp and its id: a value counts as signed only when the
 * template includes it, by its placeholder or by the header or field it is read from.
 */
export function templateCoverage(
  parts: readonly TemplatePart[],
  sources: TemplateSources,
): { timestamp: boolean; id: boolean } {
  const has = (kind: 'header' | 'field', name: string | undefined): boolean =>
    name !== undefined && parts.some((p) => p.kind === kind && p.name === name);
  const timestampKnown = sources.timestampHeader !== undefined || sources.timestampField !== undefined;
  return {
    timestamp:
      (timestampKnown && parts.some((p) => p.kind === 'timestamp')) ||
      has('header', sources.timestampHeader) ||
      has('field', sources.timestampField),
    id:
      (sources.idHeader !== undefined && parts.some((p) => p.kind === 'id')) ||
      has('header', sources.idHeader),
  };
}

/** The values a template is filled with; a part whose value is missing makes the whole content undefined. */
export interface TemplateValues {
  body: Uint8Array;
  timestamp?: string | undefined;
  id?: string | undefined;
  url?: string | undefined;
  header(name: string): string | undefined;
  field(name: string): string | undefined;
}

/** The signed bytes, or the name of the first value the delivery lacks. */
export function renderTemplate(
  parts: readonly TemplatePart[],
  values: TemplateValues,
): { bytes: Buffer } | { missing: string } {
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    let text: string | undefined;
    switch (part.kind) {
      case 'text':
        text = part.text;
        break;
      case 'body':
        chunks.push(values.body);
        continue;
      case 'timestamp':
      case 'id':
      case 'url':
        text = values[part.kind];
        break;
      case 'header':
        text = values.header(part.name);
        break;
      case 'field':
        text = values.field(part.name);
        break;
    }
    if (text === undefined)
      return {
        missing: part.kind === 'header' || part.kind === 'field' ? `${part.kind} ${part.name}` : part.kind,
      };
    chunks.push(Buffer.from(text, 'utf8'));
  }
  return { bytes: Buffer.concat(chunks) };
}

/** The template the legacy `signedContent` words stand for. */
export function legacyTemplate(signedContent: string, separator: string): string {
  if (signedContent === 'body') return '{body}';
  if (signedContent === 'timestamp.body') return `{timestamp}${separator}{body}`;
  return signedContent;
}
