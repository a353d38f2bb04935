/** The configuration keys of `configSchema`, for tests that hold docs to it (defined beside the schema). */
export { configKeys } from '../../src/config/config-keys.js';
