import { describe, expect, it } from 'vitest';
import { grantRoute, pathOf, routePath } from '../../../src/webhooks/routes.js';

const directory = { hasGrant: (grant: string) => grant === 'acme' || grant === 'a b' };

describe('the receiver route', () => {
  it('routes the bare path to every location, and {path}/{grant} to a grant of ours', () => {
    expect(grantRoute('/webhooks/calls', '/webhooks/calls', directory)).toEqual({ grant: null });
    expect(grantRoute('/webhooks/calls', '/webhooks/calls/', directory)).toEqual({ grant: null });
    expect(grantRoute('/webhooks/calls', '/webhooks/calls/acme', directory)).toEqual({ grant: 'acme' });
    expect(grantRoute('/webhooks/calls', '/webhooks/calls/a%20b', directory)).toEqual({ grant: 'a b' });
  });

  it('refuses another path, an unknown grant, a nested path and a malformed escape', () => {
    for (const pathname of [
      '/webhooks',
      '/webhooks/callsx',
      '/webhooks/calls/other',
      '/webhooks/calls/acme/more',
      '/webhooks/calls/%E0%A4%A',
    ])
      expect(grantRoute('/webhooks/calls', pathname, directory), pathname).toBeUndefined();
  });

  it('serves a root route, and drops trailing slashes from the configured one', () => {
    expect(routePath('/webhooks/calls//')).toBe('/webhooks/calls');
    expect(routePath('/')).toBe('/');
    expect(grantRoute('/', '/acme', directory)).toEqual({ grant: 'acme' });
  });

  it('reads the path of a request target, and nothing from one that is not a URL', () => {
    expect(pathOf('/webhooks/calls?x=1')).toBe('/webhooks/calls');
    expect(pathOf('http://[')).toBeUndefined();
  });
});
