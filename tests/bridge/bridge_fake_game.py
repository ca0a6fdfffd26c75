"""A tiny stand-in for a built Unity player, launched by tests through ``UnityEnvironment``.

It parses the arguments a real player gets (``--mlagents-port``, ``-logFile``, ...), dials
``localhost:<port>`` like Unity, and plays one behavior ``Fake?team=0`` whose observation is
``[step, agent_id, first action value]``. ``--fake-mode`` selects a misbehaviour:

* ``ok``: behave; exit 0 when Python closes (status 400).
* ``crash``: write log lines and exit with code 3 when the first RESET arrives.
* ``noconnect``: never connect.
* ``hang``: answer the RESET, then stop calling.
* ``quit``: at the first STEP, send a status-400 call (quitting) and exit 0.
* ``spawn``: like ``ok`` but first start a grandchild process (``sleep``) in its group.
* ``big``: observations of 1.5 million floats (> 4 MiB per message).
* ``drop``: after Python's answer to the first STEP, close the connection and stay alive.
* ``dupids``: every agent of the second half reports with the id of the first agent.

``--fake-branches 3,-2`` announces discrete branches of these sizes (with no continuous action).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
from bridge_standin import (  # noqa: E402
    EXCHANGE_PATH,
    HEADER_ONLY,
    UNITY_QUIT,
    Agent,
    Behavior,
    build_output,
    init_call,
)

from unity_gym.protocol.communicator_objects.unity_message_pb2 import (  # noqa: E402
    UnityMessageProto,
)

NAME = "Fake?team=0"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlagents-port", type=int)
    parser.add_argument("-logFile")
    parser.add_argument("--fake-mode", default="ok")
    parser.add_argument("--fake-version", default="1.5.0")
    parser.add_argument("--fake-agents", type=int, default=2)
    parser.add_argument("--fake-branches", default="")
    args, unknown = parser.parse_known_args()
    log = open(args.logFile, "a") if args.logFile else sys.stdout  # noqa: SIM115
    print(f"fake game starting: port={args.mlagents_port} unknown={unknown}", file=log, flush=True)
    if args.fake_mode == "spawn":
        subprocess.Popen(["sleep", "300"])
    if args.fake_mode == "noconnect" or args.mlagents_port is None:
        time.sleep(300)
        return 0
    channel = grpc.insecure_channel(
        f"localhost:{args.mlagents_port}", options=[("grpc.max_send_message_length", -1)]
    )
    exchange = channel.unary_unary(EXCHANGE_PATH)

    def call(data: bytes) -> UnityMessageProto:
        return UnityMessageProto.FromString(exchange(data, wait_for_ready=True, timeout=120))

    call(init_call(args.fake_version))
    answer = call(HEADER_ONLY)
    step = 0
    announced = False
    size = 1_500_000 if args.fake_mode == "big" else 3
    while answer.header.status == 200:
        rl_input = answer.unity_input.rl_input
        if rl_input.command == 1:  # RESET
            if args.fake_mode == "crash":
                for i in range(25):
                    print(f"crash log line {i}", file=log, flush=True)
                print("Fatal error: simulated crash", file=log, flush=True)
                return 3
            step = 0
        else:
            if args.fake_mode == "quit":
                call(UNITY_QUIT)
                return 0
            if args.fake_mode == "drop":
                channel.close()
                print("fake game dropped its connection", file=log, flush=True)
                time.sleep(300)
                return 0
            step += 1
        actions = list(rl_input.agent_actions[NAME].value) if NAME in rl_input.agent_actions else []
        agents = []
        for agent_id in range(args.fake_agents):
            sent = list(actions[agent_id].continuous_actions) if agent_id < len(actions) else []
            first = sent[0] if sent else 0.0
            obs = [float(step), float(agent_id), first] + [0.5] * (size - 3)
            reported = 0 if args.fake_mode == "dupids" and agent_id >= 1 else agent_id
            agents.append(Agent(id=reported, obs=[obs], reward=0.1 * step))
        branches = [int(b) for b in args.fake_branches.split(",") if b]
        behavior = Behavior(branches=branches) if branches else Behavior(continuous=1)
        brains = None if announced else {NAME: behavior}
        announced = True
        output = build_output({NAME: agents}, brains)
        if args.fake_mode == "hang" and step > 0:
            time.sleep(300)
        answer = call(output)
    print(f"fake game closing after status {answer.header.status}", file=log, flush=True)
    channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
