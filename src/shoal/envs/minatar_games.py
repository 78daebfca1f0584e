"""The MinAtar games (Young & Tian 2019), listed without importing the minatar package."""

MINATAR_GAMES = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")
