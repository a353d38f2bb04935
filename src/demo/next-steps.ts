/**
 * What the demo prints at its end: how to consume the topic, and how to run the connector alone on the demo's
 * setup. Every command line is meant to be pasted into a shell as printed (notes are `#` comments), and the
 * integration test (test/integration/cli/first-hour.test.ts) runs the tail and "alone" lines exactly as printed.
 */
/** How to start the demo's sandbox again as it was: same port, data, live changes, client and certificate. */
export interface SandboxRerun {
  port: number;
  seed: number;
  locations: number;
  calls: number;
  liveUpdatesPerSecond: number;
  liveCreatesPerSecond: number;
  clientFile: string;
  /** The sandbox's certificate (the config's api.caFile) and its key. */
  certFile: string;
  keyFile: string;
  locationsFile: string;
}

export interface NextStepsInput {
  topic: string;
  registryUrl: string;
  brokers: readonly string[];
  configFile: string;
  keyFile: string;
  sandbox: SandboxRerun;
  /** How the person invokes the CLI (see cliInvocation). */
  cli: string;
}

/**
 * The command that runs this CLI the way the person ran the demo: `npx calls-connector` when npx started it
 * (the README's `npm ci && npx calls-connector demo` in a checkout, where `calls-connector` alone is not on the
 * PATH), `calls-connector` otherwise (installed or linked).
 */
export function cliInvocation(env: NodeJS.ProcessEnv): string {
  return env.npm_command === 'exec' ? 'npx calls-connector' : 'calls-connector';
}

/** A file path as one shell word: as it is when it needs no quoting, else single-quoted. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The lines printed after the summary. */
export function nextSteps(input: NextStepsInput): string {
  const { topic, cli } = input;
  const configFile = shellWord(input.configFile);
  const brokers = input.brokers.join(',');
  return [
    `The calls are in topic ${topic}: Avro values (Confluent wire format, subject ${topic}-value), keyed by call uid.`,
    '',
    'Read them back with this CLI (decodes Avro through the registry, read_committed; headers, partitions, offsets):',
    `  ${cli} tail --config ${configFile} --from-beginning --max 10`,
    `  ${cli} tail --config ${configFile} --dead-letters --from-beginning     # the dead-letter topic`,
    'or with kcat built with Avro support (libserdes):',
    `  kcat -C -b ${brokers} -t ${topic} -X isolation.level=read_committed -o beginning -e \\`,
    `    -s value=avro -r ${input.registryUrl} -f '%p:%o %k %s\\n'`,
    "or with Apache Kafka's console consumer (keys, headers, positions; values stay Avro binary):",
    `  kafka-console-consumer.sh --bootstrap-server ${brokers} --topic ${topic} --from-beginning \\`,
    '    --isolation-level read_committed --property print.key=true --property print.headers=true',
    '',
    "Run the connector alone on the same setup: the sandbox as the demo ran it, a new grant (the demo's ended",
    'with its sandbox; open the printed URL, it is approved at once), then the connector (Ctrl-C stops it):',
    ...runAloneSteps(input).map((line) => `  ${line}`),
  ].join('\n');
}

/** The shell lines of "run the connector alone" (a trailing `\` continues a command on the next line). */
export function runAloneSteps(input: NextStepsInput): string[] {
  const { sandbox, cli } = input;
  const [configFile, keyFile, clientFile, certFile, certKeyFile, locationsFile] = [
    input.configFile,
    input.keyFile,
    sandbox.clientFile,
    sandbox.certFile,
    sandbox.keyFile,
    sandbox.locationsFile,
  ].map(shellWord);
  return [
    `${cli} sandbox --port ${sandbox.port} --seed ${sandbox.seed} --locations ${sandbox.locations} --calls ${sandbox.calls} \\`,
    `  --live-updates ${sandbox.liveUpdatesPerSecond} --live-creates ${sandbox.liveCreatesPerSecond} --auto-approve \\`,
    `  --cert ${certFile} --key ${certKeyFile} --client-file ${clientFile} --locations-out ${locationsFile} &`,
    `${cli} auth login --config ${configFile}`,
    `${cli} run --config ${configFile}     # the token store's key: ${keyFile}`,
  ];
}
