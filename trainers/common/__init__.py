"""Building blocks shared by the PPO and SAC trainers."""
