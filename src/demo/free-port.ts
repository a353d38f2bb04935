/**
 * A TCP port free on loopback right now, for a listener whose port must be known before it starts (the OAuth
 * redirect listener: its port is part of the redirect_uri registered with the sandbox).
 */
import { createServer } from 'node:net';

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** Whether `port` can be bound on 127.0.0.1 right now. */
export async function loopbackPortFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}
