/**
 * JSON objects read from text that came over the wire (an API's body, a token endpoint's answer, a webhook
 * payload, a SASL challenge): the text parsed, and kept only when it is an object. Pure.
 */

/** Whether `value` is a JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The JSON object in `text`; undefined when it is not JSON or not an object. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isPlainObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
