/**
 * The signature rule the receiver checks deliveries with, its secrets loaded at start: from the environment
 * variables `webhooks.signature.secretEnv` names (unset ones skipped: a rotation names the new and the old) and
 * from `secretFiles`, one secret a non-empty line, each file refused when others may read it
 * (secrets/secret-file.ts). Never from the configuration file. Several secrets are all active at once.
 *
 * Fails with FatalError WEBHOOK_SECRET_MISSING when no secret is set, or one the scheme cannot use (naming the
 * secret by its position, never its value); SECRET_FILE_TOO_OPEN as the secret file says.
 */
import { FatalError } from '../../errors/index.js';
import { readPrivateFile } from '../../secrets/secret-file.js';
import { signatureRuleOf, type SignatureRule, type SignatureSettings } from './verify.js';

/** What the rule is loaded from: the `webhooks` section (config/sections/webhooks.ts). */
export interface SigningSettings {
  /** Development only: no signature is checked (the runtime warns at every start). */
  allowUnsigned: boolean;
  signature: SignatureSettings & { secretEnv: readonly string[]; secretFiles: readonly string[] };
  replay: { waiveProtection: boolean };
}

export async function signatureRule(
  settings: SigningSettings,
  env: NodeJS.ProcessEnv,
): Promise<SignatureRule> {
  if (settings.allowUnsigned) return { scheme: 'none' };
  const { signature } = settings;
  const secrets = signature.secretEnv.map((name) => env[name]?.trim() ?? '').filter((s) => s !== '');
  for (const file of signature.secretFiles) secrets.push(...(await secretsIn(file)));
  if (secrets.length === 0) {
    throw new FatalError(
      'WEBHOOK_SECRET_MISSING',
      `webhooks.enabled but no signing secret: none of ${signature.secretEnv.join(', ') || '(no variables)'} ` +
        'is set and webhooks.signature.secretFiles names none',
    );
  }
  try {
    return signatureRuleOf(signature, secrets, settings.replay.waiveProtection);
  } catch (error) {
    throw new FatalError('WEBHOOK_SECRET_MISSING', (error as Error).message, { cause: error });
  }
}

/** The secrets of one file, one a non-empty line. */
async function secretsIn(file: string): Promise<string[]> {
  const text = await readPrivateFile(file, 'webhooks.signature.secretFiles').catch((error: unknown) => {
    if (error instanceof FatalError) throw error;
    throw new FatalError('WEBHOOK_SECRET_MISSING', `cannot read webhook secret file ${file}`, {
      cause: error,
    });
  });
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}
