/**
 * Issue 20, found by the chaos suite: a single-mode instance paused (SIGSTOP) during its start, before its
 * producer's first initialisation, while a supervisor starts its replacement. When the paused one wakes up, its
 * start must not fence the replacement (its first initialisation used to go ahead unasked: only
 * re-initialisations asked the instances group). It stands by; the replacement is still writing at the end, after
 * the paused one was stopped, and a read_committed reader finds every call version of the sandbox exactly once.
 *
 * Where the pause lands: the start after a kill -9, as in the chaos suite. The killed predecessor's member of
 * `<name>-instances` lingers for the group session timeout, so the next start waits in its join for it to
 * expire, before any initialisation. The predecessor is killed as the next start reports its topics ready, and
 * that start is paused as it reports its schemas registered (before it joins the group); the test then checks
 * from its log that it had not initialised its producer when it was paused, or the pause proved nothing.
 *
 * Phases wait for observable conditions (requests served, log lines, offsets caught up), never for time alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedCalls } from '../../support/connector.js';
import {
  caughtUpCheck,
  doubledAndMissing,
  explainedBy,
  type ConnectorProcess,
} from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { eventually } from '../../support/kafka.js';

describe('a single-mode instance paused during its start, before its first initialisation, while its replacement takes over', () => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      sandbox: { data: { seed: 37, locations: 3, callsPerLocation: 400, privateRatio: 0.3 } },
      connector: {
        api: { pageSize: 20, requestsPerSecond: 1_000, enrich: false },
        // Polled every second: the paused instance has live changes to write when it wakes, whatever the
        // replacement did meanwhile, so a start that went ahead would fence the replacement at once.
        poll: { intervalMs: 1_000, maxLocationsInFlight: 3 },
      },
    });
  });

  afterAll(() => scenario.close());

  it('stands by when it wakes, leaving the replacement writing to the end, nothing doubled or lost', async () => {
    const { sandbox, kafka, config, progress, start } = scenario;
    sandbox.admin.setLive({ updatesPerSecond: 4, createsPerSecond: 2 });
    const store = scenario.offsetStore('paused-start-test-offsets');
    const logged = (connector: ConnectorProcess, line: string, what: string) =>
      eventually(() => connector.output().includes(line), 60_000, what);

    const predecessor = start();
    await logged(predecessor, '"connector started"', 'the predecessor started');
    await progress(30, 'the predecessor at work');

    const paused = start();
    await logged(paused, '"topics ready"', 'the next start at its topics');
    predecessor.child.kill('SIGKILL'); // its member lingers: the next start's join waits for it to expire
    await predecessor.exited;
    await logged(paused, '"schemas registered"', 'the next start at its schemas');
    paused.child.kill('SIGSTOP');

    const replacement = start();
    await explainedBy(logged(replacement, '"connector started"', 'the replacement started'), [
      ['replacement', replacement],
    ]);
    await progress(20, 'the replacement at work while the other is paused');
    // Everything the paused process wrote before its pause has been read by now (the pipe is drained while it
    // is stopped): it had not initialised its producer, so its first initialisation is still to come.
    expect(paused.output()).not.toContain('"producer ready"');

    paused.child.kill('SIGCONT');
    await explainedBy(logged(paused, 'KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'the woken start stood by'), [
      ['woken', paused],
      ['replacement', replacement],
    ]);
    expect(paused.output()).not.toContain('"producer ready"');
    await progress(20, 'the replacement still at work after the other woke up');
    paused.child.kill('SIGTERM');
    expect(await paused.exited, paused.output()).toBe(0);

    // Changes made after the woken instance stopped can only be written by the replacement.
    const versions = () => sandbox.locations.reduce((n, l) => n + sandbox.admin.truth(l).length, 0);
    const versionsAtStop = versions();
    await eventually(() => versions() >= versionsAtStop + 10, 60_000, 'changes made after it stopped');
    sandbox.admin.setLive(false);
    await explainedBy(
      eventually(caughtUpCheck(sandbox, store), 120_000, 'every location caught up by the replacement'),
      [['replacement', replacement]],
    );
    expect(replacement.child.exitCode).toBeNull();
    expect(replacement.output()).not.toContain('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    replacement.child.kill('SIGTERM');
    expect(await replacement.exited, replacement.output()).toBe(0);

    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  }, 240_000);
});
