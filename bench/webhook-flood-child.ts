/**
 * The attacker's side of bench/webhook-flood.ts, in a process of its own so that the bench process's RSS is
 * the receiver's alone. Argument: JSON `{port, connections, addresses, declaredBytes, sentBytes}`. Opens
 * `connections` connections to 127.0.0.1:`port`, spread evenly over the loopback source addresses 127.0.0.1 ..
 * 127.0.0.`addresses`, each sending request headers declaring `declaredBytes` of body and then `sentBytes` of
 * it, and holding the connection. Sends the parent one FloodReport once every connection is closed.
 */
import { connect } from 'node:net';

export interface FloodReport {
  connections: number;
  /** Closed by the receiver without a byte of answer (refused as they opened). */
  refused: number;
  /** Answered 408 and closed (cut for being slow). */
  cut: number;
  /** Answered anything else. */
  other: number;
  /** Per connection, from its connect to its close, in ms. */
  lifetimesMs: number[];
}

interface FloodOptions {
  port: number;
  connections: number;
  addresses: number;
  declaredBytes: number;
  sentBytes: number;
}

function one(options: FloodOptions, index: number): Promise<{ answer: string; lifetimeMs: number }> {
  const localAddress = `127.0.0.${(index % options.addresses) + 1}`;
  return new Promise((resolve) => {
    const socket = connect({ port: options.port, host: '127.0.0.1', localAddress });
    let openedAt = performance.now();
    let answer = '';
    socket.on('connect', () => {
      openedAt = performance.now();
      socket.write(
        `POST /webhooks/calls HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${options.declaredBytes}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(options.sentBytes, 0x20));
    });
    socket.on('data', (chunk: Buffer) => {
      if (answer.length < 64) answer += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ answer, lifetimeMs: performance.now() - openedAt }));
  });
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as FloodOptions;
  const results = await Promise.all(Array.from({ length: options.connections }, (_, i) => one(options, i)));
  const report: FloodReport = {
    connections: results.length,
    refused: results.filter((r) => r.answer === '').length,
    cut: results.filter((r) => r.answer.startsWith('HTTP/1.1 408')).length,
    other: results.filter((r) => r.answer !== '' && !r.answer.startsWith('HTTP/1.1 408')).length,
    lifetimesMs: results.map((r) => r.lifetimeMs),
  };
  process.send?.(report, () => process.exit(0));
}

void main();
