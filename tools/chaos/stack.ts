/**
 * The chaos suite's own Kafka broker and schema registry: scripts/stack.mjs on ports of their own and with a
 * state folder of its own, so that killing them never touches a stack other work (tests, other checkouts)
 * relies on. Kafka is killed with SIGKILL and restarted on its data; the registry is stopped and started on
 * its data (schema ids survive).
 */
import { join } from 'node:path';
import { repoRoot, runToEnd, stackScript } from './processes.js';

export const CHAOS_PORTS = { kafka: 21492, controller: 21493, registry: 21481 } as const;

export interface StackEndpoints {
  brokers: string;
  registryUrl: string;
}

export class ChaosStack {
  readonly env: NodeJS.ProcessEnv;

  constructor(stateDir = join(repoRoot, '.cache', 'chaos', 'stack')) {
    this.env = {
      ...process.env,
      STACK_KAFKA_PORT: String(CHAOS_PORTS.kafka),
      STACK_CONTROLLER_PORT: String(CHAOS_PORTS.controller),
      STACK_REGISTRY_PORT: String(CHAOS_PORTS.registry),
      STACK_STATE_DIR: stateDir,
    };
  }

  private async run(command: string): Promise<string> {
    const { code, stdout, stderr } = await runToEnd([stackScript, command, '--json'], this.env);
    if (code !== 0) throw new Error(`stack.mjs ${command} failed (exit ${code}):\n${stderr.trim()}`);
    return stdout;
  }

  async up(): Promise<StackEndpoints> {
    const line = (await this.run('up')).trim().split('\n').pop() ?? '{}';
    const { brokers, registryUrl } = JSON.parse(line) as StackEndpoints;
    return { brokers, registryUrl };
  }

  down = (): Promise<string> => this.run('down');
  killKafka = (): Promise<string> => this.run('kill-kafka');
  startKafka = (): Promise<string> => this.run('start-kafka');
  stopRegistry = (): Promise<string> => this.run('stop-registry');
  startRegistry = (): Promise<string> => this.run('start-registry');
}
