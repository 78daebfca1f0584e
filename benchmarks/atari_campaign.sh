#!/usr/bin/env bash
# The Atari issue's runs, one after another, each continued where it stopped: run it again in
# a later session (or after a reboot) and it skips what is done and goes on with the rest.
#
#   bash benchmarks/atari_campaign.sh            # train everything, then score and report
#   STEPS="pong" bash benchmarks/atari_campaign.sh   # only some steps (names below)
#
# Each run is `benchmarks/atari_learning.py ... --resume auto`: its budget counts training time
# across sessions, so a run whose budget is used returns at once. The runs are benchmarks: start
# this on a machine with nothing else running. A sampler writes the load average every minute
# to runs/atari/loadavg.log, so the note can say what else ran beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
sf=${SF_PYTHON:-peers/sf/bin/python}
steps=${STEPS:-"pong peer breakout spaceinvaders dqn report"}
mkdir -p runs/atari
log=runs/atari/campaign.log

sample_load() {
    while true; do
        echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" >> runs/atari/loadavg.log
        sleep 60
    done
}
sample_load &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT

bench() { echo "[$(date -u +%FT%TZ)] $*" | tee -a "$log"; "$py" benchmarks/atari_learning.py "$@" 2>&1 | tee -a "$log"; }

for step in $steps; do
    case $step in
        # Pong to 18 within 2 hours of training, three seeds, PPO's Atari preset.
        pong) bench --env ALE/Pong-v5 --algo ppo --seeds 0 1 2 --budget-minutes 120 --phases train ;;
        # Sample Factory's APPO on Pong, same budget, cores and frame settings.
        peer) bench --env ALE/Pong-v5 --algo ppo --seeds 0 --budget-minutes 120 --phases train \
            --peer sample-factory --sf-python "$sf" ;;
        # 10M frames (2.5M agent steps) of Breakout and Space Invaders, whatever the time.
        breakout) bench --env ALE/Breakout-v5 --algo ppo --seeds 0 --total-steps 2500000 \
            --budget-minutes 600 --phases train ;;
        spaceinvaders) bench --env ALE/SpaceInvaders-v5 --algo ppo --seeds 0 \
            --total-steps 2500000 --budget-minutes 600 --phases train ;;
        # The value-based agent on Pong for 2 hours (its replay ratio held by the rate limiter).
        dqn) bench --env ALE/Pong-v5 --algo dqn --seeds 0 --budget-minutes 120 --phases train ;;
        # Score every checkpoint by the 30-episode no-op protocol (cached), tables and figures.
        report)
            bench --env ALE/Pong-v5 --algo ppo --seeds 0 1 2 --phases evaluate report gymnasium \
                --peer sample-factory --sf-python "$sf"
            bench --env ALE/Breakout-v5 --algo ppo --seeds 0 --phases evaluate report
            bench --env ALE/SpaceInvaders-v5 --algo ppo --seeds 0 --phases evaluate report
            bench --env ALE/Pong-v5 --algo dqn --seeds 0 --phases evaluate report ;;
        *) echo "unknown step $step (pong peer breakout spaceinvaders dqn report)" >&2; exit 2 ;;
    esac
done
