/**
 * Reloads the configuration while running: on SIGHUP, and on a change in the configuration file's directory,
 * it reads and validates the file again and compares it with the running configuration (config/config-diff.ts).
 *
 * - A file that does not validate: the running configuration is kept; the log names each problem.
 * - A change of any key that cannot change while running: refused as a whole, the running configuration kept;
 *   the log names each key and why (never a value: it may be a secret).
 * - Nothing changed: nothing done (logged at debug: a directory event is often not a change of ours).
 * - Otherwise the diff goes to `LocationsPort.applyLocations` (the scheduler's side), and once that resolves
 *   the new configuration is the running one and its fingerprint the one `calls_connector_configuration_info`
 *   shows, and `applied` tells it to the other instances. When it rejects, the running configuration is kept and
 *   the log says so.
 *
 * Why the directory: Kubernetes mounts a ConfigMap as a directory whose files are symlinks through `..data`,
 * and an update swaps that symlink; a watch on the file itself would keep watching the old target. Every event
 * in the directory starts (or restarts) a debounce of `debounceMs`, so an update that renames several entries,
 * or an editor that writes a temporary file then renames it, is read once, when it is complete.
 *
 * Reloads run one at a time, in order; a reload asked while one runs follows it. Contract: `start()` once
 * after the runtime started; `stop()` before it closes (no reload starts after it; one running is awaited).
 */
import { watch as watchDirectory } from 'node:fs';
import { dirname } from 'node:path';
import { changesAnything, configurationDiff, configurationFingerprint } from '../config/config-diff.js';
import type { ConfigurationDiff } from '../config/config-diff.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { ConnectorConfig } from '../config/schema.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import { startTimer, type Clock, type Timer } from '../time/clock.js';

/**
 * The scheduler's side of a reload: start the added locations (from their stored offset, else from the
 * beginning), let the removed ones finish the page in flight, commit and stop, stop then start the changed ones
 * under their new grant or startSince, and touch no unchanged one. Resolves once the change is in place; rejects
 * when it could not be made (the running configuration is then kept).
 */
export interface LocationsPort {
  /** `diff` says what changes; `next` is the configuration it comes from (its `sources` are the new ones). */
  applyLocations(diff: ConfigurationDiff, next: ConnectorConfig): Promise<void>;
}

export type ReloadResult = 'applied' | 'unchanged' | 'refused' | 'invalid' | 'failed';

/** Calls `onChange` on every change in `directory`; returns the function that stops watching. */
export type DirectoryWatch = (directory: string, onChange: () => void) => () => void;

export interface ConfigReloaderOptions {
  /** The configuration file given to `run --config`. */
  file: string;
  /** The configuration the runtime started with. */
  running: ConnectorConfig;
  target: LocationsPort;
  metrics: Pick<ConnectorMetrics, 'configurationInfo' | 'configurationReloads'>;
  /**
   * Called with the new fingerprint once a reload was applied (the configurations group's member tells the other
   * instances: kafka/group/configuration-peers.ts). Not awaited: telling them never holds up the next reload.
   */
  applied?: (fingerprint: string) => void;
  logger: Logger;
  clock: Clock;
  /** Watch the file's directory (default true); SIGHUP reloads either way. */
  watch?: boolean;
  /** Quiet time after the last directory event before the file is read (default 1 s). */
  debounceMs?: number;
  /** Reads and validates the file (default: config/load.ts loadConfig with the process environment). */
  load?: (file: string) => Promise<ConnectorConfig>;
  /** The directory watch (default: node:fs watch). */
  watchDirectory?: DirectoryWatch;
  /** Where SIGHUP is listened for (default: the process). */
  signals?: Pick<NodeJS.Process, 'on' | 'off'>;
}

const DEFAULT_DEBOUNCE_MS = 1_000;

export class ConfigReloader {
  private running: ConnectorConfig;
  private queue: Promise<unknown> = Promise.resolve();
  private debounce: Timer | undefined;
  private unwatch: (() => void) | undefined;
  private stopped = false;
  private readonly onHangUp = () => {
    this.options.logger.info('SIGHUP: reloading the configuration');
    void this.reload();
  };

  constructor(private readonly options: ConfigReloaderOptions) {
    this.running = options.running;
  }

  /** The configuration running now (the last one applied). */
  get configuration(): ConnectorConfig {
    return this.running;
  }

  start(): void {
    const { options } = this;
    options.metrics.configurationInfo.set(configurationFingerprint(this.running));
    (options.signals ?? process).on('SIGHUP', this.onHangUp);
    if (options.watch === false) return;
    const watchOn = options.watchDirectory ?? nodeDirectoryWatch(options.logger);
    this.unwatch = watchOn(dirname(options.file), () => this.changed());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    (this.options.signals ?? process).off('SIGHUP', this.onHangUp);
    this.unwatch?.();
    this.debounce?.cancel();
    await this.idle();
  }

  /** Resolves once the reloads asked so far have run. */
  async idle(): Promise<void> {
    await this.queue;
  }

  /** Reads, checks and applies the file once (after any reload running); resolves with what came of it. */
  reload(): Promise<ReloadResult> {
    const next = this.queue.then(() => this.reloadNow());
    this.queue = next;
    return next;
  }

  private changed(): void {
    if (this.stopped) return;
    this.debounce?.cancel();
    this.debounce = startTimer(
      this.options.clock,
      this.options.debounceMs ?? DEFAULT_DEBOUNCE_MS,
      () => void this.reload(),
      { unref: true },
    );
  }

  private async reloadNow(): Promise<ReloadResult> {
    // Stopping: the runtime is closing, nothing more is applied (nor counted).
    if (this.stopped) return 'unchanged';
    const result = await this.attempt();
    this.options.metrics.configurationReloads.inc({ result });
    return result;
  }

  private async attempt(): Promise<ReloadResult> {
    const { file, logger, target, metrics } = this.options;
    let next: ConnectorConfig;
    try {
      next = await (this.options.load ?? ((path: string) => loadConfig(path)))(file);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      logger.error(
        { file, problems: error.issues.length > 0 ? error.issues : [error.message] },
        `configuration not reloaded: ${error.message} (the running configuration is kept)`,
      );
      return 'invalid';
    }
    const diff = configurationDiff(this.running, next);
    if (diff.fixed.length > 0) {
      logger.error(
        { file, keys: diff.fixed },
        `configuration not reloaded: ${diff.fixed.map((f) => `${f.key} cannot change while running (${f.reason})`).join('; ')}. ` +
          'The running configuration is kept: restart to apply these keys, or undo them to reload the rest',
      );
      return 'refused';
    }
    if (!changesAnything(diff)) {
      logger.debug({ file }, 'configuration unchanged');
      return 'unchanged';
    }
    try {
      await target.applyLocations(diff, next);
    } catch (error) {
      logger.error(
        { err: error, file },
        'configuration not reloaded: the locations could not be changed (the running configuration is kept)',
      );
      return 'failed';
    }
    this.running = next;
    const fingerprint = configurationFingerprint(next);
    metrics.configurationInfo.set(fingerprint);
    this.options.applied?.(fingerprint);
    const { added, removed, changed, unchanged } = diff.locations;
    logger.info(
      {
        file,
        fingerprint,
        added: added.map((l) => l.location),
        removed: removed.map((l) => l.location),
        changed: changed.map((c) => c.to.location),
        unchanged: unchanged.length,
        grants: { added: diff.grants.added, removed: diff.grants.removed },
      },
      `configuration reloaded: ${added.length} location(s) added, ${removed.length} removed, ${changed.length} changed, ${unchanged.length} unchanged`,
    );
    return 'applied';
  }
}

/** node:fs watch of a directory; a watch that fails (the directory went away) is logged, not thrown. */
function nodeDirectoryWatch(logger: Logger): DirectoryWatch {
  return (directory, onChange) => {
    try {
      const watcher = watchDirectory(directory, { persistent: false }, () => onChange());
      watcher.on('error', (error) =>
        logger.warn({ err: error, directory }, 'configuration directory watch stopped: reload with SIGHUP'),
      );
      return () => watcher.close();
    } catch (error) {
      logger.warn({ err: error, directory }, 'cannot watch the configuration directory: reload with SIGHUP');
      return () => undefined;
    }
  };
}
