/**
 * BUSYBOX_SHIMS: shell scripts standing in for applets of the official busybox images that a host's
 * busybox binary may lack (Debian 12's busybox-static 1.35 has no `printenv`, `nohup`, `pgrep`,
 * `pkill`, `killall5` or `hush`). The local image builder installs a shim only where the binary
 * has no such applet, and records in the image which applets it still lacks.
 */
export const BUSYBOX_SHIMS: Readonly<Record<string, string>> = Object.freeze({
  printenv: `#!/bin/sh
# printenv [NAME...]: busybox's, as a shim (the host busybox has no printenv applet)
if [ $# -eq 0 ]; then exec env; fi
status=0
for name in "$@"; do
  case "$name" in *[!A-Za-z0-9_]*|'') status=1; continue ;; esac
  if eval "[ \\"\\\${$name+set}\\" = set ]"; then eval "printf '%s\\\\n' \\"\\$$name\\""; else status=1; fi
done
exit $status
`,
  nohup: `#!/bin/sh
# nohup COMMAND [ARGS]: run COMMAND immune to SIGHUP
trap '' HUP
exec "$@"
`,
  pgrep: `#!/bin/sh
# pgrep PATTERN: pids of the processes whose name matches
[ $# -ge 1 ] || { echo "Usage: pgrep PATTERN" >&2; exit 2; }
found=1
for d in /proc/[0-9]*; do
  read -r comm < "$d/comm" 2>/dev/null || continue
  case "$comm" in *$1*) echo "\${d#/proc/}"; found=0 ;; esac
done
exit $found
`,
  pkill: `#!/bin/sh
# pkill [-SIGNAL] PATTERN: signal the processes whose name matches
sig=TERM
case "$1" in -*) sig="\${1#-}"; shift ;; esac
[ $# -ge 1 ] || { echo "Usage: pkill [-SIGNAL] PATTERN" >&2; exit 2; }
found=1
for d in /proc/[0-9]*; do
  read -r comm < "$d/comm" 2>/dev/null || continue
  case "$comm" in *$1*) [ "\${d#/proc/}" != "$$" ] && kill -"$sig" "\${d#/proc/}" && found=0 ;; esac
done
exit $found
`,
  killall5: `#!/bin/sh
# killall5 [-SIGNAL]: signal every process but this one
sig=TERM
case "$1" in -*) sig="\${1#-}" ;; esac
exec kill -"$sig" -1
`,
  hush: `#!/bin/sh
# hush: busybox's other shell; ash stands in for it
exec sh "$@"
`,
});
