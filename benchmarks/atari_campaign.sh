#!/usr/bin/env bash
# The Atari issue's runs, one after another, each continued where it stopped: run it again in
# a later session (or after a reboot) and it skips what is done and goes on with the rest.
#
#   bash benchmarks/atari_campaign.sh            # train everything, then score and report
#   STEPS="pong" bash benchmarks/atari_campaign.sh   # only some steps (names below)
#
# Each run is `benchmarks/atari_learning.py ... --resume auto`: its budget counts training time
# across sessions, so a run whose budget is used returns at once. The runs are benchmarks: start
# this on a machine with nothing else running, and run any other work through
# `bash benchmarks/hold_campaign.sh COMMAND`, which pauses the current run while COMMAND lives
# (the stopped time is not training time; runs/atari/pauses.log lists each pause). A sampler
# writes the load average every minute to runs/atari/loadavg.log, so the note can say what
# else ran beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
sf=${SF_PYTHON:-peers/sf/bin/python}
# Sample Factory's run last among the timed ones: it cannot be paused (see hold_campaign.sh).
# One step is not Atari: `alphazero`, the self-play issue's 2-hour AlphaZero run on connect
# four (benchmarks/alphazero_connect_four.py), queued here so that one timed run has the
# machine at a time.
steps=${STEPS:-"pong alphazero dqn breakout spaceinvaders peer report"}
script=benchmarks/atari_learning.py  # the benchmark a step runs (`bench` below)
holds=runs/atari/holds
mkdir -p "$holds"
log=runs/atari/campaign.log

sample_load() {
    while true; do
        echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" >> runs/atari/loadavg.log
        sleep 60
    done
}
# Stops the current run's process group while a hold_campaign.sh command lives, continues it
# after; a hold whose process is gone is dropped.
pause_for_holds() {
    local stopped="" held pid group
    while true; do
        held=""
        for hold in "$holds"/[0-9]*; do
            [ -e "$hold" ] || continue
            pid=${hold##*/}
            if kill -0 "$pid" 2>/dev/null; then held=$pid; else rm -f "$hold"; fi
        done
        group=$(cat "$holds/pgid" 2>/dev/null || true)
        [ "$stopped" != "$group" ] && [ -n "$stopped" ] && stopped=""  # that run ended
        if [ -n "$held" ] && [ -n "$group" ] && [ -z "$stopped" ]; then
            kill -STOP -- "-$group" 2>/dev/null && stopped=$group \
                && echo "$(date -u +%FT%TZ) paused (held by $(cat /proc/$held/cmdline 2>/dev/null | tr '\0' ' ' | cut -c1-120))" >> runs/atari/pauses.log
        elif [ -z "$held" ] && [ -n "$stopped" ]; then
            kill -CONT -- "-$stopped" 2>/dev/null
            echo "$(date -u +%FT%TZ) continued" >> runs/atari/pauses.log
            stopped=""
        fi
        sleep 1
    done
}

sample_load &
sampler=$!
pause_for_holds &
pauser=$!
rm -f "$holds/pgid" "$holds/step"
cleanup() {
    kill "$sampler" "$pauser" 2>/dev/null
    group=$(cat "$holds/pgid" 2>/dev/null || true)
    [ -n "$group" ] && kill -CONT -- "-$group" 2>/dev/null
    rm -f "$holds/pgid" "$holds/step"
}
trap cleanup EXIT

# One benchmark in its own process group, which the pauser stops and continues (not the peer's).
bench() {
    echo "[$(date -u +%FT%TZ)] $*" | tee -a "$log"
    echo "$step" > "$holds/step"
    if [ "$step" = peer ]; then
        "$py" "$script" "$@" 2>&1 | tee -a "$log"
    else
        setsid bash -c 'echo $$ > "$0"; exec "$@"' "$holds/pgid" \
            "$py" "$script" "$@" 2>&1 | tee -a "$log"
        rm -f "$holds/pgid"
    fi
}

for step in $steps; do
    case $step in
        # Pong to 18 within 2 hours of training, three seeds, PPO's Atari preset.
        # A checkpoint every 125k agent steps (about 6 minutes): the curve's resolution.
        pong) bench --env ALE/Pong-v5 --algo ppo --seeds 0 1 2 --budget-minutes 120 --phases train \
            --checkpoint-steps 125000 ;;
        # Sample Factory's APPO on Pong, same budget, cores and frame settings.
        peer) bench --env ALE/Pong-v5 --algo ppo --seeds 0 --budget-minutes 120 --phases train \
            --peer sample-factory --sf-python "$sf" ;;
        # 10M frames (2.5M agent steps) of Breakout and Space Invaders, whatever the time.
        breakout) bench --env ALE/Breakout-v5 --algo ppo --seeds 0 --total-steps 2500000 \
            --budget-minutes 600 --phases train ;;
        spaceinvaders) bench --env ALE/SpaceInvaders-v5 --algo ppo --seeds 0 \
            --total-steps 2500000 --budget-minutes 600 --phases train ;;
        # AlphaZero on connect four, 2 hours of training (a checkpoint every 50k agent steps).
        alphazero) script=benchmarks/alphazero_connect_four.py bench --minutes 120 --seed 0 \
            --phases train ;;
        # The value-based agent on Pong for 2 hours (its replay ratio held by the rate limiter).
        dqn) bench --env ALE/Pong-v5 --algo dqn --seeds 0 --budget-minutes 120 --phases train ;;
        # Score every checkpoint by the 30-episode no-op protocol (cached), tables and figures.
        report)
            bench --env ALE/Pong-v5 --algo ppo --seeds 0 1 2 --phases evaluate report gymnasium \
                --peer sample-factory --sf-python "$sf"
            bench --env ALE/Breakout-v5 --algo ppo --seeds 0 --phases evaluate report
            bench --env ALE/SpaceInvaders-v5 --algo ppo --seeds 0 --phases evaluate report
            bench --env ALE/Pong-v5 --algo dqn --seeds 0 --phases evaluate report
            script=benchmarks/alphazero_connect_four.py bench --seed 0 --phases evaluate report ;;
        *) echo "unknown step $step (pong alphazero dqn breakout spaceinvaders peer report)" >&2
            exit 2 ;;
    esac
done
