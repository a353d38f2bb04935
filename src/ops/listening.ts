/**
 * Opening and closing the connector's own HTTP listeners (the metrics endpoint, the webhook receiver) the
 * same way: `listen` resolves once bound or rejects with the bind error (EADDRINUSE…); `closeListener` stops
 * accepting, closes idle keep-alive sockets at once and resolves when the open requests have ended.
 */
import type { Server } from 'node:http';

export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export function closeListener(server: Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.close((error) => (error === undefined ? resolve() : reject(error)));
    server.closeIdleConnections();
  });
}
