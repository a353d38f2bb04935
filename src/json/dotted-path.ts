/**
 * Reads a dotted path ("metadata.nextCursor") out of a parsed JSON body. The spec leaves the shapes of the API's
 * responses and of webhook payloads "not shown", so where things are is configuration (api.itemsField,
 * api.nextCursorField, webhooks.payload.*, ...), and one rule reads them all. Pure.
 *
 * Contract: returns `undefined` when any step is missing or not an object (absent), and the value
 * otherwise, `null` included. An empty path returns the body itself. Only own properties are read.
 */
export function readPath(body: unknown, path: string): unknown {
  if (path === '') return body;
  let node: unknown = body;
  for (const step of path.split('.')) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(node, step)) return undefined;
    node = (node as Record<string, unknown>)[step];
  }
  return node;
}
