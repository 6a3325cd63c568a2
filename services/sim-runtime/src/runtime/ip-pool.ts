/**
 * IpPool: the simulator's pod IPs (host-local IPAM's behaviour, from a random start).
 */
/** A pool of IPv4 addresses from a CIDR, handed out in order from a random start, skipping the network, gateway (.1) and broadcast. */
export class IpPool {
  readonly #first: number;
  readonly #last: number;
  #next: number;
  readonly #used = new Set<number>();

  constructor(cidr: string) {
    const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
    const octets = m?.slice(1, 5).map(Number) ?? [];
    const bits = Number(m?.[5]);
    if (m === null || octets.some((o) => o > 255) || !(bits >= 8 && bits <= 30)) throw new Error(`invalid pod subnet ${JSON.stringify(cidr)}: want an IPv4 CIDR like 10.88.0.0/16`);
    const ip = octets.reduce((a, o) => a * 256 + o, 0);
    const size = 2 ** (32 - bits);
    const network = ip - (ip % size);
    this.#first = network + 2;
    this.#last = network + size - 2;
    // A random start: simulators on one machine share the loopback range (their servers listen on
    // real pod IPs), so they should not all hand out .2 first.
    this.#next = this.#first + Math.floor(Math.random() * (this.#last - this.#first + 1));
  }

  static format(n: number): string {
    return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
  }

  /** Allocates an address, or undefined when the range is exhausted. */
  allocate(): string | undefined {
    const count = this.#last - this.#first + 1;
    for (let i = 0; i < count; i++) {
      const candidate = this.#next;
      this.#next = candidate >= this.#last ? this.#first : candidate + 1;
      if (!this.#used.has(candidate)) {
        this.#used.add(candidate);
        return IpPool.format(candidate);
      }
    }
    return undefined;
  }

  release(ip: string): void {
    const n = ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
    this.#used.delete(n);
  }

  get range(): string {
    return `${IpPool.format(this.#first)}-${IpPool.format(this.#last)}`;
  }
}
