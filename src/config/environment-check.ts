/**
 * What a valid configuration still needs from the machine it runs on: the files its keys name (CA bundles,
 * client secret, token-store key) must be readable, and the token-store key variable set. Checked by
 * `validate-config`, which connects to nothing: these are the start-up failures it can predict.
 *
 * Returns one line per problem ("key: what is wrong"); empty when nothing is missing.
 */
import { access, constants } from 'node:fs/promises';
import { signatureRuleOf } from '../webhooks/signature/verify.js';
import type { ConnectorConfig } from './schema.js';

export async function missingFromEnvironment(
  config: ConnectorConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const files: Array<[string, string | undefined]> = [
    ['api.caFile', config.api.caFile],
    ['schemaRegistry.caFile', config.schemaRegistry.caFile],
    ['oauth.clientSecretFile', config.oauth?.clientSecretFile],
    ['oauth.keyFile', config.oauth?.keyFile],
  ];
  const sasl = config.kafka.sasl;
  if (sasl?.mechanism === 'oauthbearer')
    files.push(['kafka.sasl.clientSecretFile', sasl.clientSecretFile], ['kafka.sasl.caFile', sasl.caFile]);
  const ssl = config.kafka.ssl;
  if (typeof ssl === 'object') {
    files.push(
      ['kafka.ssl.caFile', ssl.caFile],
      ['kafka.ssl.certFile', ssl.certFile],
      ['kafka.ssl.keyFile', ssl.keyFile],
    );
  }
  const webhooks = config.webhooks;
  if (webhooks.enabled) {
    if (webhooks.tls !== undefined)
      files.push(
        ['webhooks.tls.certFile', webhooks.tls.certFile],
        ['webhooks.tls.keyFile', webhooks.tls.keyFile],
      );
    for (const file of webhooks.signature.secretFiles) files.push(['webhooks.signature.secretFiles', file]);
  }
  const problems: string[] = [];
  for (const [key, path] of files) {
    if (path === undefined) continue;
    try {
      await access(path, constants.R_OK);
    } catch (error) {
      problems.push(
        `${key}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
  }
  const oauth = config.oauth;
  if (oauth !== undefined && oauth.keyFile === undefined && (env[oauth.keyEnv] ?? '') === '') {
    problems.push(
      `oauth.keyEnv: the environment variable ${oauth.keyEnv} (the token-store key) is not set; set it, or oauth.keyFile`,
    );
  }
  const signature = webhooks.signature;
  const noSecret =
    signature.secretFiles.length === 0 &&
    signature.secretEnv.every((name) => (env[name] ?? '').trim() === '');
  if (webhooks.enabled && !webhooks.allowUnsigned && noSecret) {
    problems.push(
      `webhooks.signature.secretEnv: none of ${signature.secretEnv.join(', ') || '(no variables)'} is set (the ` +
        'webhook signing secrets); set one, or webhooks.signature.secretFiles',
    );
  } else if (webhooks.enabled && !webhooks.allowUnsigned) {
    const secrets = signature.secretEnv.map((name) => (env[name] ?? '').trim()).filter((s) => s !== '');
    try {
      signatureRuleOf(signature, secrets, webhooks.replay.waiveProtection);
    } catch (error) {
      problems.push(
        `webhooks.signature.secretEnv: ${(error as Error).message} (webhooks.signature.keyEncoding)`,
      );
    }
  }
  return problems;
}
