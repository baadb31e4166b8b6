"""ddp_torch.py — a small DistributedDataParallel training job as users write them, for `kprof
trace` of a torchrun job (issue 15, bench/trace_ddp.py): each rank takes the GPU of its
LOCAL_RANK, builds the convolutional model of bench/programs/train_torch.py wrapped in DDP (NCCL
backend), then runs STEPS training steps on synthetic data, each an NVTX range named "step"
(data made on the host, forward, loss, backward — during which DDP all-reduces the gradients
with NCCL kernels — optimizer step, and a .item() that waits for the device).

usage: torchrun --standalone --nproc-per-node 2 bench/ddp_torch.py [STEPS] [--batch B]
                [--straggle RANK MS] [--cpu]
  STEPS               training steps (default 30)
  --batch B           samples per rank and step (default 64)
  --straggle RANK MS  rank RANK sleeps MS milliseconds before its backward in every step, so
                      the other ranks wait for it in the all-reduce: a known straggler
  --cpu               the gloo backend on the CPU: a dry run of the script where no GPU is
Also runs without torchrun, given RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (a
rank started by hand, as under `kprof trace -o 'rank-%r.kprof'`).

Each rank prints one line, "ddp: rank R of W on DEVICE: STEPS steps in T s (loss L)", T the
steps' wall time between two barriers (so every rank's T covers the same steps); rank 0 then
prints "ddp: world W, STEPS steps in T s".
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steps", nargs="?", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--straggle", nargs=2, type=float, metavar=("RANK", "MS"))
    ap.add_argument("--cpu", action="store_true", help="gloo on the CPU (a dry run)")
    a = ap.parse_args()
    if a.steps < 1 or a.batch < 1:
        ap.error("STEPS and --batch must be at least 1")
    if a.straggle and (a.straggle[0] != int(a.straggle[0]) or a.straggle[1] < 0):
        ap.error("--straggle RANK MS: a whole rank and milliseconds >= 0")
    return a


def nvtx(push, name=None):
    """torch.cuda.nvtx, or nothing where this torch has no NVTX (a CPU-only build)."""
    try:
        if push:
            torch.cuda.nvtx.range_push(name)
        else:
            torch.cuda.nvtx.range_pop()
    except (RuntimeError, AttributeError):
        pass


def main():
    a = parse()
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if v not in os.environ]
    if missing:
        sys.exit("ddp_torch.py: run me under torchrun (%s unset)" % ", ".join(missing))
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if a.cpu:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    else:
        if not torch.cuda.is_available():
            sys.exit("ddp_torch.py: no CUDA device (--cpu runs on the CPU with gloo)")
        if local_rank >= torch.cuda.device_count():
            sys.exit("ddp_torch.py: LOCAL_RANK %d but %d CUDA devices" % (
                local_rank, torch.cuda.device_count()))
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        try:  # device_id (torch >= 2.3): NCCL made for this GPU at once, and barrier() knows it
            dist.init_process_group("nccl", device_id=device)
        except TypeError:
            dist.init_process_group("nccl")
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's too)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=None if a.cpu else [local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    torch.manual_seed(1 + rank)  # each rank its own data
    sleep_s = a.straggle[1] / 1000.0 if a.straggle and int(a.straggle[0]) == rank else 0.0
    dist.barrier()
    t0 = time.time()
    value = float("nan")
    for _ in range(a.steps):
        nvtx(True, "step")
        x = torch.randn(a.batch, 3, 32, 32).to(device)  # made on the host, as a data loader does
        y = torch.randint(0, 10, (a.batch,)).to(device)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        if sleep_s:
            time.sleep(sleep_s)  # the straggler: the others' all-reduce waits for it
        loss.backward()  # DDP all-reduces the gradients here, bucket by bucket
        opt.step()
        value = loss.item()  # waits for the device
        nvtx(False)
    dist.barrier()
    wall = time.time() - t0
    print("ddp: rank %d of %d on %s: %d steps in %.3f s (loss %.4f)" % (
        rank, world, device, a.steps, wall, value), flush=True)
    if rank == 0:
        print("ddp: world %d, %d steps in %.3f s" % (world, a.steps, wall), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
