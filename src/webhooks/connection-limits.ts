/**
 * Caps on the receiver's open connections per source address, checked as each TCP connection opens, before
 * any byte of it is read (the overall cap is the server's own `maxConnections`). A connection over the cap is
 * destroyed at once: an attacker opening many slow connections from one address holds at most
 * `perAddress × bodyLimitBytes` of memory, and the others keep being served.
 *
 * Behind an ingress or a load balancer every connection comes from its addresses: size `perAddress` for the
 * connections it keeps open to the receiver (docs/webhooks.md, "Limits").
 */
import type { Socket } from 'node:net';

export interface ConnectionLimitOptions {
  perAddress: number;
  /** Called for each connection refused (the receiver logs it at debug). */
  refused?: (address: string) => void;
}

export class ConnectionLimits {
  /** Open connections by remote address; an address leaves the map with its last connection. */
  private readonly open = new Map<string, number>();

  constructor(private readonly options: ConnectionLimitOptions) {
    if (!Number.isInteger(options.perAddress) || options.perAddress < 1)
      throw new RangeError(`connections per address must be an integer >= 1, got ${options.perAddress}`);
  }

  /** For the server's `connection` event: counts the socket until it closes, or destroys it when over the cap. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress;
    if (address === undefined) {
      socket.destroy(); // already closed: nothing to serve
      return;
    }
    const count = this.open.get(address) ?? 0;
    if (count >= this.options.perAddress) {
      this.options.refused?.(address);
      socket.destroy();
      return;
    }
    this.open.set(address, count + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    });
  }

  /** Connections open from `address` now. */
  openFrom(address: string): number {
    return this.open.get(address) ?? 0;
  }
}
