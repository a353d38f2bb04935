/**
 * Writing responses: JSON bodies, the API's error shape, OAuth's error shape, and the two response-level
 * faults (connection dropped mid-body, malformed JSON). Every response goes through here so the stats and
 * the faults see all of them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Response-level faults to apply to a successful (2xx) JSON response. */
export interface BodyFaults {
  drop: boolean;
  malformed: boolean;
  /** Called when a fault was actually applied (for stats). */
  onApplied?: (kind: 'dropped' | 'malformed') => void;
}

export interface Responder {
  /** `text` must already be JSON (e.g. a body assembled from pre-serialised parts). */
  jsonText(
    res: ServerResponse,
    status: number,
    text: string,
    headers?: Record<string, string>,
    faults?: BodyFaults,
  ): void;
  json(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers?: Record<string, string>,
    faults?: BodyFaults,
  ): void;
  /** API errors: `{"error":{"code","message"}}`. */
  apiError(
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    headers?: Record<string, string>,
  ): void;
  /** OAuth errors (RFC 6749 5.2): `{"error","error_description"}`. */
  oauthError(
    res: ServerResponse,
    status: number,
    error: string,
    description: string,
    headers?: Record<string, string>,
  ): void;
  /**
   * `formTargets`: origins a form on the page may lead to besides 'self' (browsers apply CSP form-action to
   * the redirect that follows a submission, so the login page must allow the client's redirect origin).
   */
  html(res: ServerResponse, status: number, body: string, formTargets?: string[]): void;
  redirect(res: ServerResponse, location: string): void;
  /** A canned answer (fault injection): the body sent as-is with its content type. */
  canned(res: ServerResponse, answer: { status: number; body: string; contentType: string }): void;
}

export function createResponder(onStatus: (status: number) => void): Responder {
  const jsonText: Responder['jsonText'] = (res, status, body, headers = {}, faults) => {
    onStatus(status);
    let text = body;
    const ok = status >= 200 && status < 300;
    if (ok && faults?.malformed) {
      faults.onApplied?.('malformed');
      // Truncated mid-value with trailing garbage: not parseable, but looks like JSON at first glance.
      text = `${text.slice(0, Math.max(1, Math.floor(text.length / 2)))}\u0000<!-- upstream error -->`;
    }
    const payload = Buffer.from(text, 'utf8');
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(payload.length),
      'cache-control': 'no-store',
      ...headers,
    });
    if (ok && faults?.drop && payload.length > 1) {
      faults.onApplied?.('dropped');
      // Headers promise the whole body; half of it arrives, then the connection dies.
      res.write(payload.subarray(0, Math.floor(payload.length / 2)), () => {
        res.socket?.destroy();
      });
      return;
    }
    res.end(payload);
  };
  const json: Responder['json'] = (res, status, body, headers, faults) =>
    jsonText(res, status, JSON.stringify(body), headers, faults);
  return {
    jsonText,
    json,
    apiError: (res, status, code, message, headers) =>
      json(res, status, { error: { code, message } }, headers),
    oauthError: (res, status, error, description, headers) =>
      json(res, status, { error, error_description: description }, { pragma: 'no-cache', ...headers }),
    html: (res, status, body, formTargets = []) => {
      onStatus(status);
      const payload = Buffer.from(body, 'utf8');
      res.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': String(payload.length),
        'cache-control': 'no-store',
        'x-frame-options': 'DENY',
        'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${["'self'", ...formTargets].join(' ')}`,
      });
      res.end(payload);
    },
    redirect: (res, location) => {
      onStatus(302);
      res.writeHead(302, { location, 'cache-control': 'no-store', 'content-length': '0' });
      res.end();
    },
    canned: (res, answer) => {
      onStatus(answer.status);
      const payload = Buffer.from(answer.body, 'utf8');
      res.writeHead(answer.status, {
        'content-type': answer.contentType,
        'content-length': String(payload.length),
        'cache-control': 'no-store',
      });
      res.end(payload);
    },
  };
}

export class BodyTooLargeError extends Error {}

/** Reads a request body up to `maxBytes` (rejects with BodyTooLargeError beyond). */
export async function readBody(req: IncomingMessage, maxBytes = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > maxBytes) throw new BodyTooLargeError(`body larger than ${maxBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The media type of a Content-Type header, lower case, without parameters ('' when absent). */
export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}
