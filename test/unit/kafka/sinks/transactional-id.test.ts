/** The transactional ids of both modes, named in one place. */
import { describe, expect, it } from 'vitest';
import {
  partitionTransactionalId,
  transactionalIdFor,
} from '../../../../src/kafka/sinks/transactional-id.js';

describe('transactional ids', () => {
  it('gives single mode one id per connector name, so two instances of one name fence each other', () => {
    expect(transactionalIdFor('orders')).toBe('calls-connector.orders');
    expect(transactionalIdFor('orders')).toBe(transactionalIdFor('orders'));
  });

  it("gives each partition its own id in distributed mode, derived from the connector's", () => {
    expect(partitionTransactionalId('orders', 7)).toBe('calls-connector.orders-p7');
    expect(partitionTransactionalId('orders', 7)).not.toBe(partitionTransactionalId('orders', 17));
  });
});
