import { BoundaryFingerprints } from '../../../src/sync/location/fingerprint.js';

/** The boundary fingerprints of unit tests: keyed like the product's, by a fixed test secret. */
export const testFingerprints = BoundaryFingerprints.fromSecret('test-boundary-fingerprint-secret');
