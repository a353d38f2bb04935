/**
 * A webhook request's body as the receiver reads it from an unauthenticated sender: its content type checked,
 * and at most a limit of bytes held.
 */
import type { IncomingMessage } from 'node:http';

/** `application/json` or a `+json` type, any parameters (charset). */
export function isJsonContentType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);
}

/**
 * The raw body, or undefined once it exceeds `limit` bytes (a declared Content-Length over the limit is
 * refused before anything is read). The rest of an oversized body is drained, not buffered, so the 413
 * reaches the sender before the connection closes.
 */
export function readBoundedBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(undefined);
  }
  // Events, not `for await`: leaving an async iteration early destroys the socket, and the 413 with it.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.resume();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
    // A sender that hangs up mid-body may emit neither 'end' nor 'error': do not hold its chunks forever.
    req.once('close', () => reject(new Error('the sender closed the connection before the body ended')));
  });
}
