"""Starting one process per rank the way torchrun does (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID), for the multi-rank tests."""
import os
import socket
import subprocess


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(env, rank, world, port, per_rank=None):
    e = dict(env)
    e.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
             GROUP_RANK="0", GROUP_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
             TORCHELASTIC_RUN_ID="libprof-test")
    if per_rank:
        e.update({k: str(v) for k, v in per_rank(rank).items()})
    return e


def launch(cmd, world, env, timeout=180, per_rank=None, cwd=None):
    """Runs cmd as ranks 0..world-1 at once; returns one CompletedProcess per
    rank (rank order). per_rank(rank) -> extra variables for that rank;
    cwd(rank) -> its working directory (a host of its own). A rank still
    running at the timeout is killed (with the others) and reported with
    returncode None."""
    port = free_port()
    procs = [subprocess.Popen(cmd, env=rank_env(env, r, world, port, per_rank), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=cwd(r) if cwd else None) for r in range(world)]
    results = []
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=timeout)
            results.append(subprocess.CompletedProcess(cmd, p.returncode, out, err))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            results.append(subprocess.CompletedProcess(cmd, None, out, err))
    return results
