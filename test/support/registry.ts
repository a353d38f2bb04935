/** A schema registry stand-in on loopback for health checks and preflight: one status for a set of paths. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRegistry {
  /** http://127.0.0.1:<port> */
  base: string;
  /** The requests received, in order. */
  seen: { url: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/**
 * Answers `status` (body `[]` for a 200, a registry error body otherwise) to every request, or only to
 * `path` when given (every other path answers 404).
 */
export async function fakeRegistry(status: number, path?: string): Promise<FakeRegistry> {
  const seen: FakeRegistry['seen'] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const answer = path === undefined || req.url === path ? status : 404;
    res
      .writeHead(answer, { 'content-type': 'application/json' })
      .end(answer === 200 ? '[]' : `{"error_code":${answer}01,"message":"answered ${answer}"}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
