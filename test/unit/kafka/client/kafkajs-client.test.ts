import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaSchema } from '../../../../src/config/schema.js';
import { FatalError } from '../../../../src/errors/index.js';
import { createKafka, pinoLogCreator } from '../../../../src/kafka/client/kafkajs-client.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { thrown } from '../../../support/auth/thrown.js';
import { capturingLogger } from '../../../support/logger.js';

describe('createKafka', () => {
  it('fails at construction, naming the key, when a TLS file cannot be read', () => {
    const config = kafkaSchema.parse({ brokers: ['127.0.0.1:9093'], ssl: { caFile: '/nonexistent/ca.pem' } });
    const error = thrown(() => createKafka({ config, connectorName: 'c', logger: silentLogger() }));
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('KAFKA_TLS_FILE_UNREADABLE');
    expect((error as FatalError).message).toContain('kafka.ssl.caFile');
  });
});

describe('createKafka with kafka.sasl.mechanism oauthbearer', () => {
  it('fails at construction, naming the key, when kafka.sasl.caFile cannot be read', () => {
    const config = kafkaSchema.parse({
      brokers: ['127.0.0.1:9093'],
      sasl: {
        mechanism: 'oauthbearer',
        tokenEndpointUrl: 'https://idp.example.com/token',
        clientId: 'c',
        clientSecret: 's',
        caFile: '/nonexistent/idp-ca.pem',
      },
    });
    const error = thrown(() => createKafka({ config, connectorName: 'c', logger: silentLogger() }));
    expect((error as FatalError).code).toBe('KAFKA_TLS_FILE_UNREADABLE');
    expect((error as FatalError).message).toContain('kafka.sasl.caFile');
  });
});

describe('pinoLogCreator', () => {
  it('sends kafkajs errors and warnings as warnings and its info chatter as debug, with the namespace, never the password', () => {
    const { logger, lines } = capturingLogger();
    const log = pinoLogCreator(logger)();
    log({
      namespace: 'Connection',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { timestamp: 't', message: 'Response Error', broker: 'b:1' },
    });
    log({
      namespace: 'Consumer',
      level: logLevel.INFO,
      label: 'INFO',
      log: { timestamp: 't', message: 'joined', password: 'hunter2' },
    });

    const [error, info] = lines();
    expect(error).toMatchObject({ level: 40, msg: 'Response Error', namespace: 'Connection', broker: 'b:1' });
    expect(info).toMatchObject({ level: 20, msg: 'joined', namespace: 'Consumer' });
    expect(JSON.stringify(lines())).not.toContain('hunter2');
  });

  it("logs kafkajs's protocol traces, whose payloads hold Buffers, without throwing into kafkajs", () => {
    // Pino's redaction walked into a Buffer of a SyncGroup response and threw; thrown inside kafkajs's logger
    // call, that crashed the instances group's consumer at trace level, so the instance never joined the group.
    const { logger, lines } = capturingLogger();
    const log = pinoLogCreator(logger)();
    const trace = () =>
      log({
        namespace: 'Connection',
        level: logLevel.DEBUG,
        label: 'DEBUG',
        log: {
          timestamp: 't',
          message: 'Response SyncGroup(key: 14, version: 3)',
          payload: { memberAssignment: Buffer.from([0, 1, 2]), nested: { deeper: [Buffer.alloc(5)] } },
        },
      });

    expect(trace).not.toThrow();
    expect(lines().at(-1)).toMatchObject({
      level: 10,
      msg: 'Response SyncGroup(key: 14, version: 3)',
      payload: { memberAssignment: '<3 bytes>', nested: { deeper: ['<5 bytes>'] } },
    });
  });

  it('still logs the line, without its fields, when they cannot be logged', () => {
    const { logger, lines } = capturingLogger();
    const log = pinoLogCreator(logger)();
    const hostile = {};
    Object.defineProperty(hostile, 'boom', {
      enumerable: true,
      get: () => {
        throw new TypeError('a getter that throws');
      },
    });

    expect(() =>
      log({
        namespace: 'Consumer',
        level: logLevel.ERROR,
        label: 'ERROR',
        log: { timestamp: 't', message: 'Crash', payload: hostile },
      }),
    ).not.toThrow();
    expect(lines().at(-1)).toMatchObject({ level: 40, msg: 'Crash', namespace: 'Consumer' });
  });
});
