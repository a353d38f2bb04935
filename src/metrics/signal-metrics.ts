/** Signals (kafka/signals/): the outcomes this instance wrote, and the locations paused. */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The kinds and states an outcome has: each pair's series exists from the start (0), so rate() has data. */
const KINDS = ['backfill', 'pause', 'resume', 'reset', 'invalid'] as const;
const STATES = ['accepted', 'done', 'refused'] as const;

export function signalMetrics(registry: Registry) {
  const registers = [registry];
  const signalOutcomes = new Counter({
    name: 'calls_connector_signal_outcomes_total',
    help: 'Outcomes of signals this instance wrote, by kind (backfill, pause, resume, reset, invalid) and state (accepted: taken on and running; done; refused: the log and the outcome say why).',
    labelNames: ['kind', 'state'],
    registers,
  });
  for (const kind of KINDS) for (const state of STATES) signalOutcomes.inc({ kind, state }, 0);
  return {
    signalOutcomes,
    signalsRunning: new Gauge({
      name: 'calls_connector_signals_running',
      help: 'Backfill and reset signals accepted and not done yet (the same on every instance: each reads the whole signals topic). One that stays running past its expected time: its owner is stopped, or its backfill waits behind a history lane.',
      registers,
    }),
    pausedLocations: new Gauge({
      name: 'calls_connector_paused_locations',
      help: 'Locations paused by a pause signal and not resumed since (the same on every instance: each reads the whole signals topic).',
      registers,
    }),
  };
}
