export * from './connector-error.js';
