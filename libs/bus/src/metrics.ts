/**
 * What the bus reports for metrics, as a port: the bus does not depend on a metrics library.
 * `createBusMetrics(registry)` of `@splitlet/telemetry` implements it over prom-client
 * (`splitlet_bus_*`); pass it as `connectBus({metrics})`.
 */

/** Receives the bus's measurements. Every method must be cheap and must not throw. */
export interface BusMetrics {
  /**
   * A message of durable `consumer` on `stream` was delivered (`deliveryCount` > 1 is a
   * redelivery); `pending` is how many messages the server still holds for the consumer.
   */
  delivered(stream: string, consumer: string, deliveryCount: number, pending: number): void;
  /** A message on a subject of `subjectTemplate` was dead-lettered. */
  deadLettered(subjectTemplate: string): void;
  /**
   * A request on a subject of `subjectTemplate` finished after `seconds`: `outcome` is `ok` or the
   * BusError code (`Timeout`, `NoResponders`, `Remote`, `SchemaInvalid`, `Closed`).
   */
  requestFinished(subjectTemplate: string, outcome: string, seconds: number): void;
}
