import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionLimits } from '../../../src/webhooks/connection-limits.js';

/** What the limits use of a socket: its address, destroy() and its close event. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string | undefined) {
    super();
  }
  destroy(): void {
    this.destroyed = true;
  }
  close(): void {
    this.emit('close');
  }
}

const admitted = (limits: ConnectionLimits, address: string | undefined): FakeSocket => {
  const socket = new FakeSocket(address);
  limits.admit(socket as unknown as Socket);
  return socket;
};

describe('the receiver’s connections per address', () => {
  it('destroys a connection over the cap of its address only, and admits again once one closes', () => {
    const refused: string[] = [];
    const limits = new ConnectionLimits({ perAddress: 2, refused: (address) => refused.push(address) });
    const [a1, a2] = [admitted(limits, '10.0.0.1'), admitted(limits, '10.0.0.1')];
    const a3 = admitted(limits, '10.0.0.1');
    const b1 = admitted(limits, '10.0.0.2');
    expect([a1, a2, a3, b1].map((s) => s.destroyed)).toEqual([false, false, true, false]);
    expect(refused).toEqual(['10.0.0.1']);
    a1.close();
    expect(limits.openFrom('10.0.0.1')).toBe(1);
    expect(admitted(limits, '10.0.0.1').destroyed).toBe(false);
    a2.close();
    b1.close();
    expect(limits.openFrom('10.0.0.2')).toBe(0);
  });

  it('destroys a socket that closed before it was counted (no address)', () => {
    expect(admitted(new ConnectionLimits({ perAddress: 1 }), undefined).destroyed).toBe(true);
  });

  it('refuses a cap below one', () => {
    expect(() => new ConnectionLimits({ perAddress: 0 })).toThrow(RangeError);
  });
});
