"""Starting one process per rank the way torchrun does (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID), or with the rank variables mpirun (Open MPI) or srun
(Slurm) set instead, for the multi-rank tests."""
import os
import socket
import subprocess


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(env, rank, world, port, per_rank=None, launcher="torchrun"):
    """The rank's environment as `launcher` (torchrun, mpirun: Open MPI,
    srun: Slurm) sets it, one node; MASTER_ADDR/MASTER_PORT in every case
    (the workloads exchange NCCL's unique id there)."""
    e = dict(env)
    e.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if launcher == "torchrun":
        e.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                 GROUP_RANK="0", GROUP_WORLD_SIZE="1", TORCHELASTIC_RUN_ID="libprof-test")
    elif launcher == "mpirun":
        e.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(world),
                 OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE=str(world),
                 OMPI_COMM_WORLD_NODE_RANK="0", OMPI_UNIVERSE_SIZE=str(world))
    elif launcher == "srun":
        e.update(SLURM_PROCID=str(rank), SLURM_NTASKS=str(world), SLURM_NPROCS=str(world), SLURM_LOCALID=str(rank),
                 SLURM_NODEID="0", SLURM_NNODES="1", SLURM_JOB_ID="4242", SLURM_TASKS_PER_NODE=f"{world}")
    else:
        raise ValueError(launcher)
    if per_rank:
        e.update({k: str(v) for k, v in per_rank(rank).items()})
    return e


def launch(cmd, world, env, timeout=180, per_rank=None, cwd=None, launcher="torchrun"):
    """Runs cmd as ranks 0..world-1 at once; returns one CompletedProcess per
    rank (rank order). per_rank(rank) -> extra variables for that rank;
    cwd(rank) -> its working directory (a host of its own). A rank still
    running at the timeout is killed (with the others) and reported with
    returncode None."""
    port = free_port()
    procs = [subprocess.Popen(cmd, env=rank_env(env, r, world, port, per_rank, launcher), stdout=subprocess.PIPE,
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
