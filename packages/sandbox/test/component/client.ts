/**
 * A small HTTPS client for tests against a running sandbox: trusts its generated CA through an undici
 * Agent, and wraps the calls and OAuth endpoints without hiding status codes or bodies.
 */
import { Agent, request } from 'undici';
import type { RunningSandbox } from '../../src/index.js';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

export interface ListPage {
  data: Record<string, unknown>[];
  metadata: { nextCursor: string | null };
}

export class SandboxTestClient {
  readonly agent: Agent;

  constructor(private readonly sandbox: RunningSandbox) {
    this.agent = new Agent({ connect: { ca: sandbox.caCertPem ?? undefined }, keepAliveTimeout: 1000 });
  }

  async send(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    opts: { headers?: Record<string, string>; body?: string } = {},
  ): Promise<Reply> {
    const res = await request(`${this.sandbox.baseUrl}${path}`, {
      method,
      dispatcher: this.agent,
      headers: opts.headers,
      body: opts.body,
    });
    const text = await res.body.text();
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, text, json };
  }

  get(path: string, token?: string): Promise<Reply> {
    return this.send(
      'GET',
      path,
      token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
    );
  }

  postJson(path: string, body: unknown): Promise<Reply> {
    return this.send('POST', path, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** One listing page; query values are URL-encoded here. */
  async list(token: string, query: Record<string, string | number>): Promise<Reply & { page: ListPage }> {
    const qs = new URLSearchParams(
      Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
    const reply = await this.get(`/v4/calls?${qs}`, token);
    return { ...reply, page: reply.json as ListPage };
  }

  /** Follows nextCursor until null; returns every page. Bounded by maxPages. */
  async listAll(
    token: string,
    first: Record<string, string | number>,
    maxPages = 10_000,
  ): Promise<ListPage[]> {
    const pages: ListPage[] = [];
    let reply = await this.list(token, first);
    for (;;) {
      if (reply.status !== 200) throw new Error(`listing failed: ${reply.status} ${reply.text}`);
      pages.push(reply.page);
      const next = reply.page.metadata.nextCursor;
      if (next === null) return pages;
      if (pages.length >= maxPages) throw new Error('too many pages');
      reply = await this.list(token, { cursor: next, limit: first.limit ?? 10 });
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export function uidsOf(pages: ListPage[]): string[] {
  return pages.flatMap((p) => p.data.map((item) => String(item.uid)));
}
