import { describe, expect, it } from 'vitest';
import {
  legacyTemplate,
  parseTemplate,
  renderTemplate,
  templateCoverage,
} from '../../../../src/webhooks/signature/template.js';

const values = (over: Partial<Parameters<typeof renderTemplate>[1]> = {}) => ({
  body: Buffer.from('{"a":1}'),
  timestamp: '1700000000',
  id: 'msg_1',
  url: 'https://h.example/p?q=1',
  header: (name: string) => (name === 'x-ts' ? '42' : undefined),
  field: (name: string) => (name === 't' ? '7' : undefined),
  ...over,
});

describe('signed-content templates', () => {
  it('renders text, the raw body and each placeholder in order', () => {
    const parts = parseTemplate('v0:{timestamp}:{id}|{header.X-Ts}|{field.t}|{url}|{body}');
    const rendered = renderTemplate(parts, values());
    expect('bytes' in rendered && rendered.bytes.toString()).toBe(
      'v0:1700000000:msg_1|42|7|https://h.example/p?q=1|{"a":1}',
    );
  });

  it('names the first value a delivery lacks', () => {
    expect(renderTemplate(parseTemplate('{field.v}.{body}'), values())).toEqual({ missing: 'field v' });
    expect(renderTemplate(parseTemplate('{id}.{body}'), values({ id: undefined }))).toEqual({
      missing: 'id',
    });
  });

  it('refuses an unknown placeholder and an unmatched brace', () => {
    expect(() => parseTemplate('{nonce}')).toThrow(/unknown placeholder \{nonce\}/);
    expect(() => parseTemplate('{body')).toThrow(/unmatched/);
    expect(() => parseTemplate('body}')).toThrow(/unmatched/);
  });

  it('counts a timestamp or an id as signed only when the template includes where it is read from', () => {
    const cover = (template: string, sources: object) => templateCoverage(parseTemplate(template), sources);
    expect(cover('{body}', { timestampHeader: 'x-ts', idHeader: 'x-id' })).toEqual({
      timestamp: false,
      id: false,
    });
    expect(cover('{timestamp}.{body}', { timestampField: 't' })).toEqual({ timestamp: true, id: false });
    expect(cover('{timestamp}.{body}', {})).toEqual({ timestamp: false, id: false });
    expect(cover('{header.x-ts}{header.x-id}{body}', { timestampHeader: 'x-ts', idHeader: 'x-id' })).toEqual({
      timestamp: true,
      id: true,
    });
  });

  it('reads the older words body and timestamp.body', () => {
    expect(legacyTemplate('body', '.')).toBe('{body}');
    expect(legacyTemplate('timestamp.body', ':')).toBe('{timestamp}:{body}');
    expect(legacyTemplate('v0:{timestamp}:{body}', '.')).toBe('v0:{timestamp}:{body}');
  });
});
