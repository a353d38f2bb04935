export * from './connector-error.js';
export * from './codes.js';
export * from './exit-codes.js';
