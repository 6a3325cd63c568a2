// One end of busHopCost's stream hop (bus-hop-cost.ts), in plain JavaScript so that no loader's
// work is counted: `pub` publishes to the stream and awaits each PubAck (`<count>:<in flight>`
// on request), `sub` consumes the durable and acks each message. Both report their CPU (µs) and
// count on request.
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';

const [role, url, stream, consumer, subject, size] = process.argv.slice(2);
const nc = await connect({ servers: url });
const js = jetstream(nc);
let n = 0;
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
process.on('disconnect', () => process.exit(0));
if (role === 'sub') {
  const c = await js.consumers.get(stream, consumer);
  const messages = await c.consume({ max_messages: 256 });
  process.on('message', () => process.send({ cpu: cpu(), n }));
  process.send({ ready: true });
  for await (const m of messages) {
    m.ack();
    n++;
  }
} else {
  const payload = new Uint8Array(Number(size));
  const publish = async (count, concurrency) => {
    const inflight = new Set();
    for (let i = 0; i < count; i++) {
      const p = js.publish(subject, payload).then(() => {
        inflight.delete(p);
        n++;
      });
      inflight.add(p);
      if (inflight.size >= concurrency) await Promise.race(inflight);
    }
    await Promise.all(inflight);
  };
  process.on('message', (m) => {
    if (m === 'cpu') process.send({ cpu: cpu(), n });
    else {
      const [count, concurrency] = String(m).split(':').map(Number);
      void publish(count, concurrency).then(() => process.send({ published: n }));
    }
  });
  process.send({ ready: true });
}
