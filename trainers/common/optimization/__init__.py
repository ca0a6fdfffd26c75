"""Optimization: the flat Adam over one parameter buffer (:mod:`.flat_adam`,
:mod:`.parameter_buffer`), hyperparameter schedules and the thread budget of updates.
"""
