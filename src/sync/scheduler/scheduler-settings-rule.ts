/**
 * The scheduler's settings checked as its constructor receives them: a pure rule over plain data, so what it
 * refuses is tested without a scheduler. Called once, by the Scheduler's constructor.
 */

/** The settings the rule reads (scheduler.ts SchedulerSettings has them). */
export interface CheckedSchedulerSettings {
  maxLocationsInFlight: number;
  pagesPerTurn: number;
}

/** Throws a RangeError naming what is wrong with `settings` or `locationUids` (each scheduled once). */
export function checkSchedulerSettings(
  settings: CheckedSchedulerSettings,
  locationUids: readonly string[],
): void {
  if (!Number.isInteger(settings.maxLocationsInFlight) || settings.maxLocationsInFlight < 1)
    throw new RangeError('maxLocationsInFlight must be >= 1');
  if (!Number.isInteger(settings.pagesPerTurn) || settings.pagesPerTurn < 1)
    throw new RangeError('pagesPerTurn must be >= 1');
  if (new Set(locationUids).size !== locationUids.length)
    throw new RangeError('each location may be scheduled once');
}
