"""klog — write kprof record files (src/collect/record.h) from Python, to make synthetic traces
for tests and the scale benchmark through the real merge of `kprof trace`. Its numbers are those
of src/core/event.h's lists; tests/cli/test_golden.py checks them against a merged trace."""

import os
import struct
import time

MAGIC = 0x3152504B
FMT = "<IHHIIQQQQQII3i3iIIIIQQiI"
assert struct.calcsize(FMT) == 128
SUBMITTED_OFFSET = struct.calcsize("<IHHIIQQQ")  # the header's `submitted` field
HEADER, STRING, API, KERNEL, MEMCPY, MEMSET, SYNC, RANGE, MARK, OVERHEAD, DROPPED, NOTE, END, \
    METRIC = range(1, 15)
# API domains and copy directions (src/core/event.h's KP_DOMAIN_LIST and KP_COPY_KIND_LIST).
DOMAIN_NONE, CUDA_RUNTIME, CUDA_DRIVER, OPENCL, NVTX, SCOPE = range(0, 6)
COPY_UNKNOWN, HTOD, DTOH, DTOD, HTOH, PEER = range(0, 6)


def rec(kind, name=0, tid=1, start=0, end=0, queued=0, submitted=0, correlation=0, device=0,
        stream=0, grid=(0, 0, 0), block=(0, 0, 0), registers=0, static_smem=0, dynamic_smem=0,
        local_mem=0, nbytes=0, rid=0, status=0, aux=0, domain=0):
    return struct.pack(FMT, MAGIC, kind, domain, name, tid, start, end, queued, submitted,
                       correlation, device, stream, *grid, *block, registers, static_smem,
                       dynamic_smem, local_mem, nbytes, rid, status, aux)


def metric(key_id, value, kind):
    """A METRIC record (record.h) for the event record written right before it: key_id is the
    string id of "flops", "bytes" or a user key, kind the event's kind."""
    return rec(METRIC, name=key_id, nbytes=struct.unpack("<Q", struct.pack("<d", value))[0],
               aux=kind)


class Writer:
    """Buffered writer of one process's record file."""

    def __init__(self, path, pid, command="synthetic", start=0, ppid=1):
        self.f = open(path, "wb")
        self.strings = {}
        # The header first, then its command line's text (as the collectors' writer does: the
        # merge reads the header's live counters at the start of the file).
        self.f.write(rec(HEADER, name=1, start=start, rid=pid, aux=ppid))
        assert self.string(command) == 1

    def string(self, text):
        if text not in self.strings:
            sid = len(self.strings) + 1
            self.strings[text] = sid
            data = text if isinstance(text, bytes) else text.encode()
            self.f.write(rec(STRING, name=sid, nbytes=len(data)))
            self.f.write(data + b"\0" * ((-len(data)) % 8))
        return self.strings[text]

    def write(self, data):
        self.f.write(data)

    def mark_whole(self):
        """Write out what is buffered and mark it whole in the header (record.h: `submitted`),
        as the collectors' writer does after each batch: `kprof trace` merges up to there while
        the program runs."""
        self.f.flush()
        os.pwrite(self.f.fileno(), struct.pack("<Q", self.f.tell()), SUBMITTED_OFFSET)

    def close(self, end=None):
        if end is not None:
            self.f.write(rec(END, start=end))
        self.f.close()


def now_ns():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, the clock of every record


# KP_REC_PROCESS (record.h): where a process stands in a job, and a clock pair. Launchers are
# base/job.h's kp_launcher numbers.
PROCESS = 15
LAUNCHER_NONE, LAUNCHER_TORCHRUN, LAUNCHER_ENV, LAUNCHER_OPENMPI, LAUNCHER_PMI, \
    LAUNCHER_SLURM = range(0, 6)


def process(w, launcher=LAUNCHER_NONE, rank=-1, local_rank=-1, world_size=-1,
            local_world_size=-1, node=-1, restart=-1, host="", boot_id="", mono=0, real=0,
            uncertainty=0):
    """The PROCESS record of writer w's process (its host's and boot's strings go out first)."""
    host_id = w.string(host) if host else 0
    boot = w.string(boot_id) if boot_id else 0
    return rec(PROCESS, domain=launcher, grid=(rank, local_rank, world_size),
               block=(local_world_size, node, restart), name=host_id, rid=boot, start=mono,
               end=real, nbytes=uncertainty)
