import { afterEach, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { CallbackListener } from '../../../src/auth/callback-listener.js';
import { ManualClock } from '../../support/clock.js';

describe('CallbackListener', () => {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  async function started(clock?: ManualClock): Promise<{
    listener: CallbackListener;
    get: (query: string, path?: string) => Promise<number>;
  }> {
    const listener = await CallbackListener.start({
      redirectUri: 'https://127.0.0.1/cb',
      listen: { host: '127.0.0.1', port: 0 },
      ...(clock && { clock }),
    });
    const agent = new Agent({ connect: { ca: listener.certificatePem } });
    open.push(listener, agent);
    const get = async (query: string, path = '/cb'): Promise<number> => {
      const response = await request(`https://127.0.0.1:${listener.port}${path}?${query}`, {
        dispatcher: agent,
      });
      await response.body.dump();
      return response.statusCode;
    };
    return { listener, get };
  }

  it('serves a generated certificate for the redirect host that a client can pin, and hands over code and state', async () => {
    const { listener, get } = await started();
    expect(listener.generated).toBe(true);
    expect(listener.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    const waiting = listener.waitForRedirect('State1', 5_000);
    expect(await get('code=abc&state=State1')).toBe(200);
    expect(await waiting).toEqual({ code: 'abc', state: 'State1' });
  });

  it('reports a declined authorization', async () => {
    const { listener, get } = await started();
    const waiting = listener.waitForRedirect('State1', 5_000);
    const outcome = waiting.catch((e: unknown) => e);
    expect(await get('error=access_denied&state=State1')).toBe(400);
    expect(await outcome).toMatchObject({ code: 'AUTH_DECLINED' });
  });

  it('answers 404 off the redirect path and leaves the login waiting', async () => {
    const { listener, get } = await started();
    const waiting = listener.waitForRedirect('State1', 5_000);
    expect(await get('code=abc&state=State1', '/other')).toBe(404);
    expect(await get('code=abc&state=State1')).toBe(200);
    await expect(waiting).resolves.toMatchObject({ code: 'abc' });
  });

  it('gives up after its timeout on its clock', async () => {
    const clock = new ManualClock();
    const { listener } = await started(clock);
    const waiting = listener.waitForRedirect('State1', 120_000);
    const outcome = waiting.catch((e: unknown) => e);
    await clock.sleeping();
    clock.advance(120_000);
    expect(await outcome).toMatchObject({ code: 'AUTH_LOGIN_TIMEOUT' });
  });

  it('refuses to listen for a redirect_uri that points at another machine', async () => {
    await expect(CallbackListener.start({ redirectUri: 'https://app.example.com/cb' })).rejects.toMatchObject(
      {
        code: 'AUTH_CALLBACK_NOT_LOCAL',
      },
    );
  });

  /** A loopback listener given --cert and/or --key files. */
  const startWithFiles = (files: { certFile?: string; keyFile?: string }) =>
    CallbackListener.start({
      redirectUri: 'https://127.0.0.1/cb',
      listen: { host: '127.0.0.1', port: 0 },
      ...files,
    });

  it('needs both --cert and --key, or neither', async () => {
    await expect(startWithFiles({ certFile: '/x.pem' })).rejects.toMatchObject({
      code: 'AUTH_CALLBACK_TLS_INCOMPLETE',
    });
  });

  it('names the first of --cert and --key it cannot read', async () => {
    await expect(
      startWithFiles({ certFile: '/nonexistent/cert.pem', keyFile: '/nonexistent/key.pem' }),
    ).rejects.toMatchObject({
      code: 'AUTH_CALLBACK_TLS_UNREADABLE',
      message: expect.stringContaining('cannot read /nonexistent/cert.pem (--cert, ENOENT)') as unknown,
    });
  });
});
