"""triton_add.py — a Triton kernel (JIT-compiled, its cubin loaded at run time) for `kprof trace
--capture` tests (issue 26).

    python3 triton_add.py OUTDIR

Adds two float32 vectors of 1 << 20 elements with `kp_triton_add` (BLOCK 1024) three times
(out = x + y, then out = out + y twice), through PyTorch's caching allocator, and writes x.bin,
y.bin and out1.bin .. out3.bin (out after launch k) into OUTDIR. Prints "triton_add: ok"; exits
77 when triton or a CUDA device is missing."""

import os
import sys

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover - the GPU machine has both
    print("triton_add: skipped: %s" % e, file=sys.stderr)
    sys.exit(77)


@triton.jit
def kp_triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def main():
    if len(sys.argv) != 2:
        print("usage: triton_add.py OUTDIR", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("triton_add: skipped: no CUDA device", file=sys.stderr)
        return 77
    out_dir = sys.argv[1]
    n = 1 << 20
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(n, device="cuda", generator=g)
    y = torch.rand(n, device="cuda", generator=g)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    x.cpu().numpy().tofile(os.path.join(out_dir, "x.bin"))
    y.cpu().numpy().tofile(os.path.join(out_dir, "y.bin"))
    kp_triton_add[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    out.cpu().numpy().tofile(os.path.join(out_dir, "out1.bin"))
    for k in (2, 3):
        kp_triton_add[grid](out, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        out.cpu().numpy().tofile(os.path.join(out_dir, "out%d.bin" % k))
    print("triton_add: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
