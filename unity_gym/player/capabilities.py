"""Capabilities exchanged in the handshake (spec §6) and how the player adapts to the trainer's."""

from __future__ import annotations

from dataclasses import dataclass, fields

from unity_gym.protocol.communicator_objects.capabilities_pb2 import UnityRLCapabilitiesProto

__all__ = ["Capabilities"]


@dataclass(frozen=True)
class Capabilities:
    """The seven ``UnityRLCapabilitiesProto`` flags; all true for API 1.5.0 peers."""

    base_rl: bool = True
    concatenated_png_observations: bool = True
    compressed_channel_mapping: bool = True
    hybrid_actions: bool = True
    training_analytics: bool = True
    variable_length_observation: bool = True
    multi_agent_groups: bool = True

    @classmethod
    def from_proto(cls, proto: UnityRLCapabilitiesProto) -> Capabilities:
        """Read the flags a peer sent."""
        return cls(
            base_rl=proto.baseRLCapabilities,
            concatenated_png_observations=proto.concatenatedPngObservations,
            compressed_channel_mapping=proto.compressedChannelMapping,
            hybrid_actions=proto.hybridActions,
            training_analytics=proto.trainingAnalytics,
            variable_length_observation=proto.variableLengthObservation,
            multi_agent_groups=proto.multiAgentGroups,
        )

    def to_proto(self) -> UnityRLCapabilitiesProto:
        """The wire form of these flags."""
        return UnityRLCapabilitiesProto(
            baseRLCapabilities=self.base_rl,
            concatenatedPngObservations=self.concatenated_png_observations,
            compressedChannelMapping=self.compressed_channel_mapping,
            hybridActions=self.hybrid_actions,
            trainingAnalytics=self.training_analytics,
            variableLengthObservation=self.variable_length_observation,
            multiAgentGroups=self.multi_agent_groups,
        )

    def missing(self) -> list[str]:
        """Names of the flags that are false."""
        return [f.name for f in fields(self) if not getattr(self, f.name)]
