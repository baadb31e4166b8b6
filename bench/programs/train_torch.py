"""train_torch.py — a small PyTorch training script as users write them, for `kprof trace`'s
verdict on the GPU machine: import torch (seconds of start-up before the first kernel), build a
convolutional model, then STEPS training steps, each an NVTX range named "step" (data made on the
host, forward, loss, backward, optimizer step, a .item() that waits for the device).

usage: train_torch.py [STEPS] [BATCH[,BATCH2]] [SPIN]   (default 30, 64, 0)

BATCH,BATCH2 (e.g. 64,96): the steps alternate between the two batch sizes, so that kernels of
several shapes (launch geometries) run under one name (bench/verdict_quality.py's traces).

SPIN > 0 adds to every step one kernel of PyTorch's own that spins for SPIN GPU cycles
(torch.cuda._sleep): a kernel whose time the caller sets, so that `kprof diff` can be shown a
run where exactly one kernel got slower (bench/diff_torch.py).
"""

import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
batches = [int(b) for b in sys.argv[2].split(",")] if len(sys.argv) > 2 else [64]
spin = int(sys.argv[3]) if len(sys.argv) > 3 else 0
device = "cuda"
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
t0 = time.time()
for step in range(steps):
    batch = batches[step % len(batches)]
    torch.cuda.nvtx.range_push("step")
    x = torch.randn(batch, 3, 32, 32).to(device)  # made on the host, as a data loader does
    y = torch.randint(0, 10, (batch,)).to(device)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if spin:
        torch.cuda._sleep(spin)
    value = loss.item()  # waits for the device
    torch.cuda.nvtx.range_pop()
print("steps %d loss %.4f in %.3f s" % (steps, value, time.time() - t0))
