#!/usr/bin/env bash
# Run a command while the Atari campaign (benchmarks/atari_campaign.sh) is paused, so that the
# campaign's timed runs never share the machine with other work:
#
#   bash benchmarks/hold_campaign.sh make test
#
# The campaign stops its current run with SIGSTOP while any such command lives and continues it
# with SIGCONT after; shoal leaves the stopped time out of a run's training time
# (shoal/runtime/frozen_time.py). Sample Factory's run cannot be paused that way (its clock
# would count the pause), so during it this waits until it ends. Without a campaign running,
# this just runs the command.
set -uo pipefail
holds=${HOLD_DIR:-"$(cd "$(dirname "$0")/.." && pwd)/runs/atari/holds"}
mkdir -p "$holds"
while [ "$(cat "$holds/step" 2>/dev/null)" = peer ]; do
    echo "hold_campaign: Sample Factory's timed run is in progress; waiting for it to end" >&2
    sleep 60
done
touch "$holds/$$"
trap 'rm -f "$holds/$$"' EXIT
# The campaign looks every second; give it two to stop its run before the command starts.
[ -s "$holds/pgid" ] && sleep 2
"$@"
