"""Wire protocol of Unity ML-Agents (communication API 1.5.0): generated protobuf classes."""
