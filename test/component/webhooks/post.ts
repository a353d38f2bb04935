/** One HTTP(S) request to a receiver, with exact headers and raw bytes (fetch would add and normalize some). */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export function post(
  url: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; method?: string; ca?: string } = {},
): Promise<Answer> {
  const target = new URL(url);
  const body = options.body ?? '';
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: options.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          ...options.headers,
          'content-length': Buffer.byteLength(body),
        },
        ...(options.ca !== undefined && { ca: options.ca }),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
