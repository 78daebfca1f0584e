"""PPO on MinAtar Breakout: mean return against frames over 3 seeds, with the preset's budget.

Target (issue 3): mean return >= 20 by 5M frames (the MinAtar paper's actor-critic reaches about
17.5, its DQN about 10).

    python benchmarks/minatar_ppo.py [--seeds 3] [--parallel 2] [--env minatar:breakout]
                                     [--total-steps 5000000] [--runs-dir DIR]
"""

from minatar_runs import main

if __name__ == "__main__":
    main("ppo", __doc__.split("\n\n")[0])
