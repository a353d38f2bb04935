import { describe, expect, it } from 'vitest';
import { abortable, SingleFlight } from '../../../src/auth/single-flight.js';
import { deferred } from '../../support/async.js';

describe('SingleFlight', () => {
  it('gives the callers that ask while an operation runs its promise, and starts a new one after it settled', async () => {
    const flight = new SingleFlight<number>();
    let started = 0;
    const gate = deferred();
    const start = async () => {
      started += 1;
      await gate.promise;
      return started;
    };
    const first = flight.run(start);
    const second = flight.run(start);
    gate.resolve();
    expect(await Promise.all([first, second])).toEqual([1, 1]);
    expect(await flight.run(start)).toBe(2);
  });

  it('starts a new operation after one failed', async () => {
    const flight = new SingleFlight<string>();
    await expect(flight.run(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await flight.run(async () => 'again')).toBe('again');
  });
});

describe('abortable', () => {
  it('lets one waiter stop waiting with its signal’s reason while the operation goes on for the others', async () => {
    const operation = deferred<string>();
    const controller = new AbortController();
    const waiter = abortable(operation.promise, controller.signal);
    controller.abort(new Error('shutting down'));
    await expect(waiter).rejects.toThrow('shutting down');
    operation.resolve('token');
    expect(await abortable(operation.promise, undefined)).toBe('token');
  });

  it('rejects at once for a signal already aborted, with an Error when the reason is none', async () => {
    const controller = new AbortController();
    controller.abort('not an error');
    await expect(abortable(new Promise<never>(() => undefined), controller.signal)).rejects.toThrow(
      'aborted',
    );
  });
});
