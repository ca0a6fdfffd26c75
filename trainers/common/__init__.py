"""What every trainer is built from, by concern.

The base trainer (:mod:`trainers.common.trainer`: settings, stats, checkpoints and the update
thread of one behavior) and the observation and action layouts every part reads
(:mod:`trainers.common.spaces`) live here; the rest is split in subpackages:
:mod:`~trainers.common.networks` (policy, critics, encoders, memory, distributions, the
normalizer and the acting policy), :mod:`~trainers.common.buffers` (rollouts, replay,
sequences and the batches reward signals read), :mod:`~trainers.common.checkpoints`
(checkpoint files and ONNX export), :mod:`~trainers.common.optimization` (the flat Adam,
schedules and update threads) and :mod:`~trainers.common.bookkeeping` (statistics and
progress). Nothing here imports an algorithm, the env manager or the environments.
"""
