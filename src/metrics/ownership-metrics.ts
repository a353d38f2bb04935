/**
 * Which locations this instance owns (several instances share the locations in `connector.mode:
 * distributed`): owned and unowned locations and partitions, rebalances, handovers, partitions taken over; and
 * whether this instance writes (single mode: it holds the transactional id, or stands by).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function ownershipMetrics(registry: Registry) {
  const registers = [registry];
  return {
    instanceWriter: new Gauge({
      name: 'calls_connector_instance_writer',
      help: "Whether this instance writes: 1 while its writer runs (single mode: it holds the connector's transactional id); 0 while it stands by because a newer instance with the same connector.name writes (it takes over once no newer instance is a member of the instances group). Sum over instances: 1 in single mode.",
      registers,
    }),
    ownedLocations: new Gauge({
      name: 'calls_connector_owned_locations',
      help: 'Configured locations this instance owns and polls: those whose offsets-topic partition it is assigned (all of them in single mode).',
      registers,
    }),
    ownedPartitions: new Gauge({
      name: 'calls_connector_owned_partitions',
      help: 'Offsets-topic partitions this instance owns (distributed mode: its group assignment; single mode: all).',
      registers,
    }),
    rebalances: new Counter({
      name: 'calls_connector_rebalances_total',
      help: 'Assignments this instance received from the instances group (one per completed rebalance it took part in).',
      registers,
    }),
    unownedLocations: new Gauge({
      name: 'calls_connector_unowned_locations',
      help: 'Configured locations whose offsets-topic partition no live member of the instances group owns, as this instance sees the group (0 in single mode). Take the max over instances.',
      registers,
    }),
    locationHandover: new Histogram({
      name: 'calls_connector_location_handover_seconds',
      help: "Per partition taken over: from the moment it lost its previous owner (or the rebalance began, as this instance saw it) to its locations being handed to this instance's scheduler, due at once.",
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
      registers,
    }),
    partitionsTakenOver: new Counter({
      name: 'calls_connector_partitions_taken_over_total',
      help: 'Partitions this instance dropped because another instance fenced its transactional producer (it had lost them in a rebalance it had not seen yet).',
      registers,
    }),
  };
}
