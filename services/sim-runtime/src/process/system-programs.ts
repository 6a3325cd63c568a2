/**
 * Simulated busybox applets about processes and identity: `id`, `whoami`, `killall`.
 */
import { parseSignal, type Program, type SimSignal } from './program.js';

/** Names of the users and groups of the local busybox image's /etc/passwd and /etc/group. */
const NAMES: Readonly<Record<number, string>> = { 0: 'root', 65534: 'nobody' };
const GROUP_NAMES: Readonly<Record<number, string>> = { 0: 'root', 65534: 'nogroup' };

const named = (id: number, names: Readonly<Record<number, string>>): string => (names[id] !== undefined ? `${id}(${names[id]})` : String(id));

/** `id [-u|-g|-G] [-n]`: the container's user (CRI run_as_user/run_as_group/supplemental_groups). */
export const id: Program = async (argv, io, env) => {
  const { uid, gid, groups } = env.container.user;
  // getgroups(): the primary group and the supplemental ones, as the runtime set them (ascending).
  const all = [...new Set([gid, ...groups])].sort((a, b) => a - b);
  const flags = argv.slice(1).join('');
  const byName = flags.includes('n');
  const show = (n: number, names: Readonly<Record<number, string>>): string => (byName ? (names[n] ?? String(n)) : String(n));
  if (flags.includes('u')) io.stdout.write(`${show(uid, NAMES)}\n`);
  else if (flags.includes('G')) io.stdout.write(`${all.map((g) => show(g, GROUP_NAMES)).join(' ')}\n`);
  else if (flags.includes('g')) io.stdout.write(`${show(gid, GROUP_NAMES)}\n`);
  else if (argv.length > 1 && !argv[1]?.startsWith('-')) {
    io.stderr.write(`id: unknown user ${argv[1]}\n`);
    return 1;
  } else io.stdout.write(`uid=${named(uid, NAMES)} gid=${named(gid, GROUP_NAMES)} groups=${all.map((g) => named(g, GROUP_NAMES)).join(',')}\n`);
  return 0;
};

/** `whoami`: the user's name, or busybox's error for a uid without one. */
export const whoami: Program = async (_argv, io, env) => {
  const name = NAMES[env.container.user.uid];
  if (name === undefined) {
    io.stderr.write(`whoami: unknown uid ${env.container.user.uid}\n`);
    return 1;
  }
  io.stdout.write(`${name}\n`);
  return 0;
};

/** `killall [-SIG] NAME...`: signals the container's processes of that name (SIGTERM by default). */
export const killall: Program = async (argv, io, env) => {
  let names = argv.slice(1);
  let sig: SimSignal = 'TERM';
  if (names[0]?.startsWith('-') === true) {
    const parsed = parseSignal(names[0].slice(1));
    if (parsed === undefined || parsed === 'EXIT') {
      io.stderr.write(`killall: bad signal name '${names[0].slice(1)}'\n`);
      return 1;
    }
    sig = parsed;
    names = names.slice(1);
  }
  if (names.length === 0) {
    io.stderr.write('BusyBox multi-call binary.\n\nUsage: killall [-l] [-q] [-SIG] PROCESS_NAME...\n');
    return 1;
  }
  let status = 0;
  for (const name of names) {
    const targets = [...env.container.processes].filter((p) => p.name === name);
    if (targets.length === 0) {
      io.stderr.write(`killall: ${name}: no process killed\n`);
      status = 1;
    }
    for (const p of targets) p.signal(sig);
  }
  return status;
};
