"""DQN on MinAtar Breakout and Space Invaders: mean return against frames over 3 seeds.

Target (issue 6): within 2M frames, above the MinAtar paper's DQN at 5M frames (Young & Tian
2019: about 10 on Breakout, about 43 on Space Invaders).

    python benchmarks/minatar_dqn.py [--seeds 3] [--parallel 2] [--total-steps 2000000]
                                     [--env minatar:breakout,minatar:space_invaders]
"""

from minatar_runs import parse_args, run_seeds

PAPER_DQN_AT_5M = {"minatar:breakout": 10.0, "minatar:space_invaders": 43.0}

if __name__ == "__main__":
    args = parse_args(__doc__.split("\n\n")[0], total_steps=2_000_000)
    games = args.env.split(",") if args.env != "minatar:breakout" else list(PAPER_DQN_AT_5M)
    for game in games:
        runs_dir = None if args.runs_dir is None else args.runs_dir / game.replace(":", "-")
        target = PAPER_DQN_AT_5M.get(game, 0.0)
        run_seeds("dqn", game, args.seeds, args.parallel, args.total_steps, runs_dir, target)
