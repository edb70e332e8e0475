#!/bin/bash
# Runs a command in a fresh cgroup v1 memory group of LIMIT_MB MiB (default 64: the
# harness's 16 MiB pool + 48 MiB), after dropping the OS page cache, then prints the
# group's peak usage and how often it hit its limit (memory.failcnt). As root.
#
#   LIMIT_MB=64 engine/examples/cgroup_run.sh target/release/examples/read_profile run ...
set -euo pipefail
cg=/sys/fs/cgroup/memory/aimeta-profile
[ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
mkdir -p "$cg"
echo $((${LIMIT_MB:-64} << 20)) >"$cg/memory.limit_in_bytes"
sync
echo 3 >/proc/sys/vm/drop_caches
bash -c "echo \$\$ > $cg/tasks; exec \"\$@\"" _ "$@"
echo "max_usage $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MiB; failcnt $(cat "$cg/memory.failcnt")"
