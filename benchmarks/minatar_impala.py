"""IMPALA on MinAtar Breakout: mean return against frames over 3 seeds, with the preset's budget.

Target (issue 4): mean return >= 20 by 5M frames.

    python benchmarks/minatar_impala.py [--seeds 3] [--parallel 2] [--env minatar:breakout]
                                        [--total-steps 5000000] [--runs-dir DIR]
"""

from minatar_runs import main

if __name__ == "__main__":
    main("impala", __doc__.split("\n\n")[0])
