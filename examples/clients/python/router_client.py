#!/usr/bin/env python3
"""Ask an MCPSAG router which skills fit a task, then load the best one.

The gRPC modules are generated from the router's .proto file; see README.md
for the command. Then, with the router running:

    PYTHONPATH=gen python3 router_client.py "fill in a PDF form from a JSON file"

Exit codes: 0 ok (including "no skill fits"), 1 a gRPC error, 2 usage.
"""

import argparse
import os
import sys

import grpc

from mcpsag.router.v1 import router_pb2, router_pb2_grpc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="what the agent is asked to do")
    parser.add_argument("--addr", default=os.environ.get("MCPSAG_ADDR", "127.0.0.1:7443"),
                        help="router address (MCPSAG_ADDR; default 127.0.0.1:7443)")
    parser.add_argument("--top-k", type=int, default=3, help="candidates to ask for")
    parser.add_argument("--budget", type=int, default=200, help="token budget for the skill body")
    args = parser.parse_args(argv)

    # A router with access control wants a bearer token on every call.
    token = os.environ.get("MCPSAG_TOKEN", "")
    metadata = [("authorization", "Bearer " + token)] if token else None

    with grpc.insecure_channel(args.addr) as channel:
        stub = router_pb2_grpc.SkillRouterStub(channel)
        try:
            res = stub.Match(router_pb2.MatchRequest(task=args.task, top_k=args.top_k),
                             timeout=10, metadata=metadata)
            if res.abstained:
                print("no skill fits:", router_pb2.AbstainReason.Name(res.abstain_reason))
                return 0
            for rank, cand in enumerate(res.candidates, 1):
                print(f"{rank}. {cand.skill.name} (fused {cand.scores.fused:.3f}): {cand.reason}")

            best = res.candidates[0].skill.name
            body = stub.Load(router_pb2.LoadRequest(name=best, level=router_pb2.LOAD_LEVEL_BODY,
                                                    token_budget=args.budget),
                             timeout=10, metadata=metadata)
        except grpc.RpcError as err:
            print(f"router_client: {err.code().name}: {err.details()}", file=sys.stderr)
            return 1

    # Skill text is untrusted data: it comes framed in <skill_content ...>
    # with its source and hash, for the agent to treat as such.
    cut = ", truncated" if body.truncated else ""
    print(f"--- {body.name}: {body.tokens} of {body.total_tokens} tokens{cut}")
    print(body.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
