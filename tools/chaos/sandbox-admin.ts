/** The sandbox's admin API (packages/sandbox/README.md), over HTTPS trusting the sandbox's generated CA. */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'undici';

export class SandboxAdmin {
  private constructor(
    readonly baseUrl: string,
    private readonly dispatcher: Agent,
  ) {}

  static async open(baseUrl: string, caFile: string): Promise<SandboxAdmin> {
    return new SandboxAdmin(baseUrl, new Agent({ connect: { ca: await readFile(caFile, 'utf8') } }));
  }

  async call<T>(method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown): Promise<T> {
    const response = await request(`${this.baseUrl}/_sandbox/${path}`, {
      method,
      dispatcher: this.dispatcher,
      headersTimeout: 30_000,
      bodyTimeout: 60_000,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await response.body.text();
    if (response.statusCode !== 200)
      throw new Error(`sandbox admin ${method} ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }

  /** Browser-like GET (the scripted user of `auth login`): returns the redirect target. */
  async follow(url: string, trustAnyCertificate: boolean): Promise<string | null> {
    const dispatcher = trustAnyCertificate
      ? new Agent({ connect: { rejectUnauthorized: false } })
      : this.dispatcher;
    try {
      const response = await request(url, { dispatcher });
      await response.body.dump();
      const location = response.headers.location;
      return typeof location === 'string' ? location : null;
    } finally {
      if (dispatcher !== this.dispatcher) await dispatcher.close();
    }
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}
