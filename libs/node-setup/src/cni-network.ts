/**
 * The pod network of one local containerd: a CNI bridge with its own name, device and subnet, so
 * several instances (a developer's and CI's) can run on one machine without touching each other
 * or the machine-global CNI state (`/etc/cni/net.d`, `/var/lib/cni/networks`, `cni0`, 10.88.0.0/16).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommand } from './host-command.js';
import { RuntimeError } from './runtime-error.js';

/** Where Debian's containernetworking-plugins puts the CNI plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni';

/** The CNI plugins the conflist uses; all must be in {@link CNI_BIN_DIR}. */
export const CNI_PLUGINS = ['bridge', 'host-local', 'portmap'] as const;

/** The pod network of one instance. */
export interface PodNetwork {
  /** The CNI network name (`splitlet-<6 hex>` unless given). */
  name: string;
  /** The Linux bridge device (`spl<6 hex>`, ≤ 15 chars). */
  bridge: string;
  /** The pods' IPv4 subnet, e.g. `10.213.7.0/24`. */
  subnet: string;
  /** The bridge's address in the subnet (the first host address). */
  gateway: string;
}

/** An IPv4 CIDR as numbers. */
interface Cidr {
  base: number;
  prefix: number;
}

function ipToInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

function intToIp(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

function parseCidr(cidr: string): Cidr | undefined {
  const m = /^(\d+\.\d+\.\d+\.\d+)(?:\/(\d{1,2}))?$/.exec(cidr.trim());
  if (!m?.[1]) return undefined;
  const ip = ipToInt(m[1]);
  const prefix = m[2] === undefined ? 32 : Number(m[2]);
  if (ip === undefined || prefix > 32) return undefined;
  const size = 2 ** (32 - prefix);
  return { base: ip - (ip % size), prefix };
}

function overlaps(a: Cidr, b: Cidr): boolean {
  const aEnd = a.base + 2 ** (32 - a.prefix);
  const bEnd = b.base + 2 ** (32 - b.prefix);
  return a.base < bEnd && b.base < aEnd;
}

/** The IPv4 networks already in use on the host (addresses and routes), except on `ignoreDevice`. */
export function hostNetworks(ignoreDevice?: string): { cidr: string; dev: string }[] {
  const out: { cidr: string; dev: string }[] = [];
  const addr = hostCommand('ip', ['-4', '-o', 'addr', 'show']);
  if (addr.error) throw new RuntimeError('Missing', `cannot run ip (${addr.error.message}); install iproute2`);
  for (const line of addr.stdout.split('\n')) {
    // "4: eth0    inet 192.0.2.2/24 brd … scope global eth0"
    const m = /^\d+:\s+(\S+)\s+inet\s+(\S+)/.exec(line);
    if (m?.[1] && m[2] && m[1] !== ignoreDevice) out.push({ dev: m[1], cidr: m[2] });
  }
  const routes = hostCommand('ip', ['-4', 'route', 'show', 'table', 'all']);
  for (const line of (routes.stdout ?? '').split('\n')) {
    const m = /^(?:(?:local|broadcast|unicast)\s+)?(\d+\.\d+\.\d+\.\d+(?:\/\d+)?)\s.*?\bdev\s+(\S+)/.exec(line);
    if (m?.[1] && m[2] && m[2] !== ignoreDevice && m[1] !== '0.0.0.0/0') out.push({ dev: m[2], cidr: m[1] });
  }
  return out;
}

/** Ranges never chosen: the host's loopback, containerd's and Docker's defaults, link-local. */
const RESERVED: readonly Cidr[] = ['127.0.0.0/8', '10.88.0.0/16', '172.17.0.0/16', '169.254.0.0/16'].map((c) => parseCidr(c) as Cidr);

function conflict(subnet: Cidr, used: { cidr: string; dev: string }[]): string | undefined {
  for (const r of RESERVED) if (overlaps(subnet, r)) return `${intToIp(r.base)}/${r.prefix} (reserved)`;
  for (const u of used) {
    const c = parseCidr(u.cidr);
    if (c !== undefined && c.prefix > 0 && overlaps(subnet, c)) return `${u.cidr} on ${u.dev}`;
  }
  return undefined;
}

/** A short stable hash of the state dir: names and subnet derive from it. */
export function instanceHash(stateDir: string): string {
  return createHash('sha256').update(stateDir).digest('hex');
}

/**
 * Picks this instance's pod network. The same state dir gives the same result across restarts:
 * the choice is saved in `<dir>/network.json` and reused while it stays valid. A new subnet is a
 * 10.x.y.0/24 with x in 200–249 picked from a hash of the state dir, skipping any that overlap an
 * address or route on the host (other than our own bridge) or 10.88.0.0/16.
 *
 * @param dir  the instance's containerd folder (`<stateDir>/containerd`)
 * @param subnet  an explicit IPv4 CIDR (prefix /8–/29); its conflicts are an error, not skipped
 * @param name  the CNI network name
 */
export function choosePodNetwork(dir: string, opts: { stateDir: string; subnet?: string | undefined; name?: string | undefined }): PodNetwork {
  const hash = instanceHash(opts.stateDir);
  const bridge = `spl${hash.slice(0, 6)}`;
  const name = opts.name ?? `splitlet-${hash.slice(0, 6)}`;
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(name)) throw new RuntimeError('InvalidOption', `invalid CNI network name "${name}" (letters, digits, _ . -)`);
  const used = hostNetworks(bridge);
  const file = join(dir, 'network.json');

  if (opts.subnet !== undefined) {
    const c = parseCidr(opts.subnet);
    if (c === undefined || c.prefix < 8 || c.prefix > 29) throw new RuntimeError('InvalidOption', `subnet "${opts.subnet}" is not an IPv4 CIDR with a prefix of /8 to /29`);
    const clash = conflict(c, used);
    if (clash !== undefined) throw new RuntimeError('NetworkConflict', `subnet ${opts.subnet} overlaps ${clash}; pick another with --subnet`);
    return save(file, { name, bridge, subnet: `${intToIp(c.base)}/${c.prefix}`, gateway: intToIp(c.base + 1) });
  }

  if (existsSync(file)) {
    try {
      const prev = JSON.parse(readFileSync(file, 'utf8')) as Partial<PodNetwork>;
      const c = typeof prev.subnet === 'string' ? parseCidr(prev.subnet) : undefined;
      if (c !== undefined && prev.bridge === bridge && conflict(c, used) === undefined) {
        return save(file, { name, bridge, subnet: `${intToIp(c.base)}/${c.prefix}`, gateway: intToIp(c.base + 1) });
      }
    } catch {
      // an unreadable network.json is replaced below
    }
  }
  for (let attempt = 0; attempt < 256; attempt++) {
    const h = attempt === 0 ? hash : instanceHash(`${opts.stateDir}#${attempt}`);
    const x = 200 + (parseInt(h.slice(6, 8), 16) % 50);
    const y = parseInt(h.slice(8, 10), 16);
    const c: Cidr = { base: ((10 * 256 + x) * 256 + y) * 256, prefix: 24 };
    if (conflict(c, used) === undefined) return save(file, { name, bridge, subnet: `10.${x}.${y}.0/24`, gateway: `10.${x}.${y}.1` });
  }
  throw new RuntimeError('NetworkConflict', 'no free 10.200-249.y.0/24 subnet found for the pod network; give one with --subnet');
}

function save(file: string, net: PodNetwork): PodNetwork {
  writeFileSync(file, `${JSON.stringify(net, null, 2)}\n`);
  return net;
}

/**
 * The CNI conflist for the network: `bridge` (gateway on the bridge, so the host reaches pods; no
 * masquerade and no default route, so pods reach only their subnet and the host's bridge address),
 * `host-local` IPAM with its store under our folder, and `portmap` for hostPorts. Loopback is not in
 * the chain: containerd's CRI plugin sets up `lo` in every pod itself.
 */
export function podNetworkConflist(net: PodNetwork, ipamDataDir: string): object {
  return {
    cniVersion: '1.0.0',
    name: net.name,
    plugins: [
      {
        type: 'bridge',
        bridge: net.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: net.subnet, gateway: net.gateway }]],
          dataDir: ipamDataDir,
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** Writes the conflist as the only file in `confDir` (containerd loads the first one). */
export function writePodNetworkConfig(confDir: string, ipamDataDir: string, net: PodNetwork): string {
  mkdirSync(confDir, { recursive: true });
  mkdirSync(ipamDataDir, { recursive: true });
  const path = join(confDir, '10-splitlet.conflist');
  writeFileSync(path, `${JSON.stringify(podNetworkConflist(net, ipamDataDir), null, 2)}\n`);
  return path;
}

/** True if the network device exists. */
export function linkExists(device: string): boolean {
  return existsSync(`/sys/class/net/${device}`);
}

/** Deletes the bridge device if it exists (`ip link del`). Idempotent. */
export function deleteBridge(device: string): void {
  if (!linkExists(device)) return;
  const r = hostCommand('ip', ['link', 'del', device]);
  if (r.status !== 0 && linkExists(device)) {
    throw new RuntimeError('StopFailed', `ip link del ${device} failed: ${(r.stderr || r.error?.message || '').trim()}`);
  }
}
