"""Networks and encoders: the policy, value and Q networks (:mod:`.models`), observation
encoders and attention, the LSTM memory, action distributions, the observation normalizer,
mixed precision, and :class:`~trainers.common.networks.acting.ActingPolicy`, the one object
that acts with a policy and keeps each slot group's memory.
"""
