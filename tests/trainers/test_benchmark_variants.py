"""The configs the learning benchmarks derive from ML-Agents' example configs."""

from __future__ import annotations

import yaml

from benchmarks.intrinsic_imitation import PYRAMIDS_CONFIG, pyramids_variants

#: ML-Agents' ``config/ppo/PyramidsRND.yaml`` (release 21) but its budget (``max_steps``,
#: ``summary_freq``).
PYRAMIDS_RND = {
    "trainer_type": "ppo",
    "hyperparameters": {
        "batch_size": 128, "buffer_size": 2048, "learning_rate": 0.0003, "beta": 0.01,
        "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3, "learning_rate_schedule": "linear",
    },
    "network_settings": {
        "normalize": False, "hidden_units": 512, "num_layers": 2, "vis_encode_type": "simple",
    },
    "reward_signals": {
        "extrinsic": {"gamma": 0.99, "strength": 1.0},
        "rnd": {
            "gamma": 0.99, "strength": 0.01, "learning_rate": 0.0001,
            "network_settings": {"hidden_units": 64, "num_layers": 3},
        },
    },
    "keep_checkpoints": 5,
    "time_horizon": 128,
}  # fmt: skip


def test_the_pyramids_rnd_variant_is_ml_agents_pyramids_rnd_config() -> None:
    config = yaml.safe_load(PYRAMIDS_CONFIG.read_text(encoding="utf-8"))
    variants = pyramids_variants(config)
    rnd = variants["rnd"]["behaviors"]["Pyramids"]
    for budget in ("max_steps", "summary_freq"):
        rnd.pop(budget)
    assert rnd == PYRAMIDS_RND  # no `threaded` (false), unlike Pyramids.yaml
    curiosity = variants["curiosity"]["behaviors"]["Pyramids"]
    assert curiosity == config["behaviors"]["Pyramids"] and curiosity["threaded"] is True
    extrinsic = variants["extrinsic"]["behaviors"]["Pyramids"]
    assert set(extrinsic["reward_signals"]) == {"extrinsic"} and extrinsic["threaded"] is True
