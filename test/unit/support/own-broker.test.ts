import { expect, it } from 'vitest';
import { openTransactions } from '../../support/own-broker.js';

const HEADER =
  'ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t';

it('reads the open transactions of describe-producers, and none where Kafka 4.x prints None or 3.x prints -1', () => {
  const described = [
    'SLF4J: a line of the JVM, not of the table',
    HEADER,
    '1         \t0            \t0                     \t13          \t1795723345626\t15                           \t',
    '3         \t0            \t2                     \t0           \t1795723352256\tNone                         \t',
    '4         \t0            \t2                     \t0           \t1795723352256\t-1                           \t',
  ].join('\n');
  expect(openTransactions(described)).toEqual([{ producerId: '1', startOffset: '15' }]);
});
