"""Wire protocol of Unity ML-Agents (communication API 1.5.0): generated protobuf classes.

What lives here: ``communicator_objects/``, the classes generated from the official ``.proto``
files, ``wire_format``, the varints written by hand, and ``regenerate``, the script that
regenerates the classes. The bottom layer of unity_gym: it
imports nothing else from the package.
"""
