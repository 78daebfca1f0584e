"""R2D2 on MinAtar Breakout and Space Invaders, ray launcher with 2 actors: mean return against
frames over 3 seeds, and the learner's updates (gradient steps on a batch of sequences) per second.

Each seed is one `shoal train r2d2 --runtime ray --actors 2` process with the game's preset
(sized for a CPU learner: sequences of 30 trained steps after a 10-step burn-in, a new one
every 20 steps, batches of 32, a 128-unit LSTM, n = 5, gamma 0.99, priority exponent 0.9,
8 sequences sampled per sequence inserted; see presets/r2d2.yaml); `--parallel` runs that many
at once. MinAtar has no frame skip, so frames
are agent steps. For reference, the MinAtar paper's DQN at 5M frames: about 10 on Breakout,
about 43 on Space Invaders (Young & Tian 2019).

    python benchmarks/minatar_r2d2.py [--seeds 3] [--parallel 1] [--total-steps 400000]
                                      [--env minatar:breakout,minatar:space_invaders]
"""

from minatar_runs import parse_args, run_seeds

PAPER_DQN_AT_5M = {"minatar:breakout": 10.0, "minatar:space_invaders": 43.0}
RAY = ["--runtime", "ray", "--actors", "2", "--actor-cpus", "0.5", "--replay-cpus", "0.25"]

if __name__ == "__main__":
    args = parse_args(__doc__.split("\n\n")[0], total_steps=400_000)
    games = args.env.split(",") if args.env != "minatar:breakout" else list(PAPER_DQN_AT_5M)
    for game in games:
        runs_dir = None if args.runs_dir is None else args.runs_dir / game.replace(":", "-")
        target = PAPER_DQN_AT_5M.get(game, 0.0)
        run_seeds("r2d2", game, args.seeds, args.parallel, args.total_steps, runs_dir, target, RAY)
