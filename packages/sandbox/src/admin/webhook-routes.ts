/**
 * The admin routes of the call.* webhooks (JSON in, JSON out; behind the admin key like every /_sandbox/ route).
 * The signing secret is never answered here: it is given at start (`webhooks.secret`, the CLI's
 * SANDBOX_WEBHOOK_SECRET) or read in-process (`admin.webhooks.secret`).
 *
 *   GET    /_sandbox/webhooks/targets            -> {"data": [url...]}
 *   POST   /_sandbox/webhooks/targets {"url", "caPem"?} -> {"data": [url...]}   register a target
 *   DELETE /_sandbox/webhooks/targets            -> {"data": []}
 *   GET    /_sandbox/webhooks/faults / PUT {"rates"?: {fault: 0..1}, "delayMs"?} -> {"data": settings}
 *   POST   /_sandbox/webhooks/faults/once {"fault"}  -> {"queued": fault}   the next delivery gets it
 *   GET    /_sandbox/webhooks/stats              -> {"data": stats}
 *   GET    /_sandbox/webhooks/deliveries         -> {"data": [delivery...]}  the last 1000
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { Responder } from '../http/respond.js';
import type { SandboxWebhooks } from '../webhooks/dispatcher.js';
import { WEBHOOK_FAULTS } from '../webhooks/faults.js';

const targetSchema = z
  .object({ url: z.url({ protocol: /^https?$/ }), caPem: z.string().min(1).optional() })
  .strict();
const rate = z.number().min(0).max(1);
const faultsSchema = z
  .object({
    rates: z
      .object(
        Object.fromEntries(WEBHOOK_FAULTS.map((f) => [f, rate.optional()])) as Record<
          string,
          z.ZodOptional<typeof rate>
        >,
      )
      .strict()
      .optional(),
    delayMs: z.number().min(0).optional(),
  })
  .strict();
const onceSchema = z.object({ fault: z.enum(WEBHOOK_FAULTS) }).strict();

export async function handleWebhookAdmin(
  webhooks: SandboxWebhooks,
  respond: Responder,
  req: IncomingMessage,
  res: ServerResponse,
  route: string,
  jsonBody: (req: IncomingMessage) => Promise<Record<string, unknown>>,
): Promise<void> {
  switch (route) {
    case 'GET /_sandbox/webhooks/targets':
      respond.json(res, 200, { data: webhooks.targets() });
      return;
    case 'POST /_sandbox/webhooks/targets': {
      const target = targetSchema.parse(await jsonBody(req));
      webhooks.addTarget(
        target.caPem === undefined ? { url: target.url } : { url: target.url, caPem: target.caPem },
      );
      respond.json(res, 200, { data: webhooks.targets() });
      return;
    }
    case 'DELETE /_sandbox/webhooks/targets':
      webhooks.removeTargets();
      respond.json(res, 200, { data: [] });
      return;
    case 'GET /_sandbox/webhooks/faults':
      respond.json(res, 200, { data: webhooks.faults() });
      return;
    case 'PUT /_sandbox/webhooks/faults': {
      const change = faultsSchema.parse(await jsonBody(req));
      webhooks.setFaults({
        ...(change.rates !== undefined && { rates: change.rates }),
        ...(change.delayMs !== undefined && { delayMs: change.delayMs }),
      });
      respond.json(res, 200, { data: webhooks.faults() });
      return;
    }
    case 'POST /_sandbox/webhooks/faults/once': {
      const { fault } = onceSchema.parse(await jsonBody(req));
      webhooks.failNext(fault);
      respond.json(res, 200, { queued: fault });
      return;
    }
    case 'GET /_sandbox/webhooks/stats':
      respond.json(res, 200, { data: webhooks.stats() });
      return;
    case 'GET /_sandbox/webhooks/deliveries':
      respond.json(res, 200, { data: webhooks.deliveries() });
      return;
    default:
      respond.apiError(res, 404, 'not_found', `no admin route ${route}`);
  }
}
