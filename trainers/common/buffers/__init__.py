"""Experience kept between acting and learning: PPO's rollouts and SAC's replay
(:mod:`.experience`), recurrent training sequences (:mod:`.sequences`) and the batches that
reward signals and demonstrations hand to each other (:mod:`.batches`).
"""
