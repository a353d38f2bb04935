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
