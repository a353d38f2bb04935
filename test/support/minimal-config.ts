/** The smallest valid configuration document (static token, one location), for tests of one section. */
export const MINIMAL_CONFIG = {
  connector: { name: 'n' },
  api: { baseUrl: 'https://api.example.test' },
  auth: { staticToken: 't' },
  sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
  kafka: { brokers: ['127.0.0.1:9092'] },
  schemaRegistry: { url: 'http://127.0.0.1:8081' },
} as const;
