/*
 * main.c — the `kprof` command: one table of subcommands, `kprof help CMD` and `kprof CMD --help`,
 * `kprof --version`, and the exit-code contract.
 */
#include "tools/kprof/cli.h"
#include "kprof.h"

#include <stdio.h>
#include <string.h>

static int kp_cmd_help(int argc, char **argv);
static int kp_cmd_version(int argc, char **argv);

const kp_command kp_commands[] = {
    {"caps", kp_cmd_caps, "every backend and device, with its limits (or why it cannot run)",
     "usage: kprof caps [--json] [--backend B]\n"
     "       kprof caps --measure [--backend B] [--device N] [--max-bytes B] [--iters N]\n"
     "                            [--dry-run] [--json]\n"
     "\n"
     "Lists every platform and device of every backend: name, vendor, driver, compute units,\n"
     "max threadgroup size, threadgroup (local) memory, global memory, timer resolution,\n"
     "whether device timestamps work, and the measured bandwidth ceiling. A backend that\n"
     "cannot run says why.\n"
     "\n"
     "--measure measures the default (or chosen) device's bandwidth ceiling: kprof's copy\n"
     "kernels over buffers sized from the device's last-level cache, then the demo_add\n"
     "kernel. A GPU: three sizes from 8x its L2 up (at least 64 MiB, powers of two), best of\n"
     "20 dispatches after 3 warm-ups. Any other device (a CPU): two sizes from 4x its cache\n"
     "up, best of 5 after 1 warm-up. One line on stderr says what is measured; progress\n"
     "follows on a terminal. The result is kept per device in kprof's store ($KPROF_STORE,\n"
     "default ~/.local/share/kprof/kprof.db) and `kprof run` then reports ~GB/s as a share\n"
     "of it.\n"
     "\n"
     "  --json         machine-readable output\n"
     "  --backend B    only this backend (opencl, cuda; auto: all)\n"
     "  --device N     with --measure: the device to measure\n"
     "  --max-bytes B  with --measure: largest buffer; below the last-level cache it is\n"
     "                 refused (exit 2): copies inside the cache measure the cache\n"
     "  --iters N      with --measure: timed dispatches per point (default 20 on a GPU, 5\n"
     "                 elsewhere)\n"
     "  --dry-run      with --measure: say what would be measured, measure nothing\n"
     "\n"
     "Exit code 3 when no device can be used.\n"},
    {"isolate", kp_cmd_isolate, "make a scratch kernel folder (template or --from FILE)",
     "usage: kprof isolate NAME [--from FILE] [--lang cl|cu] [--force]\n"
     "\n"
     "Creates $KPROF_HOME/kernels/NAME/ (KPROF_HOME defaults to ./.kprof) holding the kernel\n"
     "source: FILE with --from, else the demo_add template (out[i] = a[i] + b[i]) in the\n"
     "language of the default device (CUDA where a CUDA GPU exists, else OpenCL C).\n"
     "NAME may hold letters, digits, '_', '-' and '.', so it cannot escape the folder.\n"
     "\n"
     "  --from FILE    copy FILE (.cl, .cu, .ptx or .cubin) in as the kernel\n"
     "  --lang L       template language: cl (OpenCL C) or cu (CUDA C++)\n"
     "  --force        replace a kernel source already in the folder\n"},
    {"run", kp_cmd_run,
     "compile one kernel, run it on deterministic buffers, time it on the device",
     "usage: kprof run NAME|FILE --buffers SPEC [--entry K] [--grid G] [--tg T]\n"
     "                 [--iters N] [--warmup N] [--bytes B] [--json]\n"
     "                 [--backend opencl|cuda|auto] [--device N] [--timeout S]\n"
     "                 [--smem B] [--timer auto|cupti|events] [--source[=N]]\n"
     "                 [-D NAME[=V]] [-I DIR] [--options 'OPTS']\n"
     "\n"
     "Compiles the kernel at run time (binaries cached by source, options and device under\n"
     "~/.cache/kprof), fills and binds the buffers, runs --warmup untimed dispatches and then\n"
     "--iters timed ones, each timed with the device's own timestamps, and reports device ms\n"
     "(GPU ms on a GPU) median/min/p90/max, ~GB/s touched, the kernel's reflection, the\n"
     "readings that apply, and a digest of every buffer afterwards. On a device that runs\n"
     "kernels inside kprof's process (PoCL on the CPU) the session runs in a child process: a\n"
     "kernel that faults ends the run with exit 4, naming the likely cause. A --tg the kernel's\n"
     "declaration rules out (reqd_work_group_size, __launch_bounds__, .reqntid) is refused\n"
     "before anything runs. On a terminal a progress line on stderr says what is running.\n"
     "\n"
     "  NAME|FILE      a folder made by `kprof isolate NAME`, or a .cl/.cu/.ptx/.cubin file\n"
     "  --entry K      kernel to run (default: the file's only kernel)\n"
     "  --grid G       total threads per dimension: 1048576, 4096x4096 (default 1048576)\n"
     "  --tg T         threads per threadgroup: 256, 16x16 (default 256); --block, --local\n"
     "  --buffers SPEC kernel arguments in declaration order, comma-separated:\n"
     "                   TYPE:COUNT[:FILL]  buffer; FILL rand (default), zero, iota, const=V\n"
     "                   TYPE=VALUE         scalar\n"
     "                   local:BYTES        local (threadgroup) memory\n"
     "                 TYPE: f32 f64 i8 u8 i16 u16 i32 u32 i64 u64; COUNT takes K/M/G\n"
     "  --iters N      timed dispatches (default 50)\n"
     "  --warmup N     untimed dispatches first (default 3)\n"
     "  --bytes B      bytes the kernel really moves per dispatch, for ~GB/s (default: every\n"
     "                 buffer element touched once)\n"
     "  --json         print the result as JSON; with NAME also write NAME/run.json\n"
     "  --timeout S    report a dispatch still running after S seconds (default: none)\n"
     "  --smem B       dynamic shared memory bytes (CUDA)\n"
     "  --timer T      CUDA clock: auto (CUPTI kernel records, else events), cupti, events\n"
     "  --source[=N]   after the timing, sample the kernel's PCs (CUDA: CUPTI PC sampling,\n"
     "                 separate dispatches) and print the N hottest source lines (default 10)\n"
     "                 with their stall reasons; --json carries every line. Where it cannot\n"
     "                 run, one line `kprof: source: REASON` on stderr, and the run goes on\n"
     "  -D, -I, --options   compiler options\n"
     "  --sweep-tg     sweep threadgroup sizes (see kprof help sweep); a --tg given too is\n"
     "                 one of them, marked \"your --tg\"\n"
     "  --tg-list L    sweep these sizes: 96,128,256 or 8x8,16x16,32x8\n"
     "  --plot F.svg   with a sweep: draw GPU time and occupancy against tg\n"
     "  --force        let --plot replace an existing file\n"
     "\n"
     "Environment: KPROF_BACKEND, KPROF_DEVICE, KPROF_HOME, KPROF_CACHE_DIR, KPROF_DUMP_DIR\n"
     "(dump source, options, log and binary of every kernel compiled).\n"},
    {"sweep", kp_cmd_sweep, "the occupancy curve: one kernel across threadgroup sizes",
     "usage: kprof sweep NAME|FILE --buffers SPEC [--entry K] [--grid G] [--tg-list L] [--tg T]\n"
     "                   [--iters N] [--warmup N] [--bytes B] [--json] [--plot FILE.svg]\n"
     "                   [--force]\n"
     "                   [run's other options]\n"
     "       (the same as kprof run ... --sweep-tg)\n"
     "\n"
     "Runs the kernel at a fixed grid across threadgroup sizes: by default powers of two from\n"
     "the execution width (warp, or the preferred work-group multiple; 64 when unknown) up to\n"
     "the kernel's maximum; --tg-list gives any set, 2-D and 3-D shapes too; a kernel whose\n"
     "declaration requires one size (reqd_work_group_size, .reqntid) is swept at that size\n"
     "only. --tg adds its size to the sweep and marks its row \"your --tg\". Each row shows\n"
     "median and min GPU ms, ~GB/s, % of the measured ceiling and, on CUDA, the theoretical\n"
     "occupancy with its limiter, printed as soon as it is measured. A closing block names the\n"
     "best point (◀ best) and the points whose difference from it is within the measured\n"
     "spread (the larger p10..p90 range of the two): ties rather than losers. With fewer than\n"
     "two sizes measured there is no best: one size is not a comparison. Register-pressure\n"
     "and shared-memory warnings come before it.\n"
     "Every size is checked before anything runs (above the kernel's maximum, not the size it\n"
     "requires, zero, not a divisor of the grid where the device needs whole groups), each bad\n"
     "one named. A point that faults stops the sweep: the rows measured so far are printed and\n"
     "the fault named. SIGINT, SIGTERM or SIGHUP stop it at once: the rows so far are printed\n"
     "(with --json, the JSON of them with \"complete\": false, also written to sweep.json) and\n"
     "kprof exits 128 + the signal.\n"
     "\n"
     "  --tg-list L    sizes to sweep: 64,96,128 or 8x8,16x16,32x8 (one shape per grid dim)\n"
     "  --tg T         sweep this size too and mark it (a `run` command plus --sweep-tg)\n"
     "  --json         print JSON at the end; with NAME also write NAME/sweep.json\n"
     "  --plot F.svg   draw GPU time and occupancy against threadgroup size\n"
     "  --force        let --plot replace an existing file\n"
     "\n"
     "A progress line goes to stderr while the sweep runs, on a terminal only.\n"},
    {"bench", kp_cmd_bench, "a kernel's time you can trust, and is B really faster than A?",
     "usage: kprof bench NAME|FILE --buffers SPEC [--entry K] [--grid G] [--tg T] [options]\n"
     "       kprof bench A B --buffers SPEC ...        (or one FILE with --entry twice)\n"
     "       kprof bench NAME|FILE ... --compare EARLIER-bench.json\n"
     "\n"
     "Times the kernel (the vocabulary of `kprof run`) until its median is known: at least\n"
     "--min-samples samples and --min-time seconds of device time, then until the median's\n"
     "distribution-free 95% interval is within --max-noise of it; or until that noise stops\n"
     "shrinking (settled: a timer's quantum, a noise floor); or at --timeout. The row says which\n"
     "rule stopped it. Samples come in batches of about 10 ms of device time.\n"
     "Hot: dispatches back to back. Cold: the device's last-level cache (CUDA: L2; OpenCL: the\n"
     "global memory cache) emptied before every sample by reading twice its size, untimed; its\n"
     "cost is shown. On CUDA the SM clock is read (NVML) around every batch: samples taken below\n"
     "--throttle of the default clock are discarded, counted and warned about.\n"
     "Two kernels (A B, or --entry twice) run in turn, batch by batch: their i-th samples are\n"
     "pairs, so drift cancels. Two kernels of one file share one session (one process, program\n"
     "and set of buffers); two files are two sessions. The answer is median(B)/median(A) with a\n"
     "paired block-bootstrap 95% interval and a verdict: SAME (the interval inside ±--threshold), FASTER or\n"
     "SLOWER (wholly outside it), UNSURE (it straddles the threshold: more samples would\n"
     "decide). Where clocks were read the difference must show in cycles too, else UNSURE.\n"
     "--compare FILE compares this run with an earlier bench.json, point by point (unpaired).\n"
     "\n"
     "  --axis N=V1,V2  a parameter: its values go into --grid, --tg, --buffers and -D wherever\n"
     "                 the name N stands alone or inside {EXPR}; several axes make a product.\n"
     "                 Values are numbers (1M = 1048576) or words (f32,f64)\n"
     "  --bytes EXPR   bytes one dispatch moves, in the axes (12*N); default: every buffer\n"
     "                 element touched once\n"
     "  --flops EXPR   floating-point operations of one dispatch (2*N): adds GFLOP/s\n"
     "  --cache C      hot (default), cold or both; --cold and --hot say the same\n"
     "  --max-noise P  the goal, in percent of the median (default 0.5)\n"
     "  --min-time S   device time before any rule may stop (default 0.5)\n"
     "  --min-samples N  (default 10)\n"
     "  --timeout S    wall time of one measurement (default 15)\n"
     "  --warmup N     untimed dispatches first (default 3)\n"
     "  --throttle P   discard samples below P% of the default SM clock (default 75)\n"
     "  --threshold P  a comparison's SAME band, in percent (default 1)\n"
     "  --compare F    compare with an earlier run's bench.json\n"
     "  --fail-if-slower P  exit 5 when B (or this run) is SLOWER by more than P percent:\n"
     "                 its whole interval above 1 + P% (in cycles too where read)\n"
     "  --json         print JSON with every sample (a kernel folder keeps it as bench.json)\n"
     "  --plot F.svg   draw the one varying axis against time (--plot-y gbps|gflops: throughput)\n"
     "  --force        let --plot replace an existing file\n"
     "  --kernel-timeout S  give up on a dispatch that runs longer (run's --timeout)\n"
     "  --grid, --tg, --buffers, --entry, -D, -I, --options, --backend, --device, --smem,\n"
     "  --timer        as for `kprof run`\n"
     "\n"
     "Exit code 5 when --fail-if-slower finds a regression.\n"},
    {"trace", kp_cmd_trace, "record what an unmodified program does on the GPU",
     "usage: kprof trace [-o FILE] [--force] [--queue-times] [--grace S] [--] CMD ARGS...\n"
     "       kprof trace --merge DIR [-o FILE] [--force]\n"
     "\n"
     "Runs CMD with kprof's collectors injected and writes everything every process of it did\n"
     "on the GPU into one trace file (SQLite; docs/trace-format.md): host API calls, kernels,\n"
     "copies, fills, synchronization and NVTX ranges, all on one host clock.\n"
     "  CUDA    CUDA_INJECTION64_PATH + CUPTI activity records (static or shared cudart,\n"
     "          Python programs such as PyTorch too)\n"
     "  NVTX    NVTX_INJECTION64_PATH: ranges and marks recorded by kprof itself, the same\n"
     "          with or without CUDA, from the first NVTX call on\n"
     "  OpenCL  an OPENCL_LAYERS layer that turns profiling on for every queue, and the\n"
     "          same wrappers through LD_PRELOAD for ICD loaders without layers (set\n"
     "          KPROF_OPENCL_INTERCEPT=layer|preload to use only one of the two)\n"
     "A program that forks or execs has every process recorded. Records are flushed as the\n"
     "program runs, so a crash leaves the trace up to near the crash. Dropped records, and\n"
     "records that could not be written (a full TMPDIR), are counted and warned about; a trace\n"
     "with no GPU activity says so, with the likely reasons.\n"
     "\n"
     "SIGINT, SIGTERM and SIGHUP sent to kprof go on to the program (to its process group when\n"
     "kprof is not in a terminal's foreground); kprof waits --grace seconds for it to end, kills\n"
     "it after that, merges what was recorded and exits 128+signal. A second signal kills the\n"
     "program at once and stops the merge; the records are then kept, and so they are when the\n"
     "merge fails (a full disk): kprof says where, and --merge DIR finishes the job.\n"
     "\n"
     "Jobs: each process's rank, local rank, world size and node come from its launcher's\n"
     "variables (torchrun RANK..., Open MPI OMPI_COMM_WORLD_*, PMI_RANK, Slurm SLURM_PROCID...).\n"
     "Under mpirun or srun, one kprof per rank: -o 'job-%r.kprof' gives each its own file. %r or\n"
     "%l without a launcher variable, %q{VAR} unset or empty, an unknown %x, or a value holding\n"
     "'/' is a usage error. Ranks writing one name never overwrite each other: all but the first\n"
     "to finish fail, and keep their records for --merge.\n"
     "\n"
     "  -o, --output FILE   the trace (default: the first free trace_N.kprof here); checked,\n"
     "                      and its temporary FILE.tmp.PID made, before CMD starts; FILE may\n"
     "                      hold %r (rank), %l (local rank), %p (kprof's pid), %h (host),\n"
     "                      %q{VAR} (a variable's value) and %% (a %), expanded first\n"
     "  --force             replace FILE if it exists\n"
     "  --grace S           after passing a signal on, wait S seconds (default 10) for CMD\n"
     "  --merge DIR         make the trace from a folder of records a merge left behind\n"
     "  --queue-times       CUDA: also record when each kernel was queued; kernels then run\n"
     "                      one at a time (CUPTI gives queue times safely only with\n"
     "                      serialized kernel records, which carry no submit time)\n"
     "\n"
     "The exit code is CMD's (128+signal after a signal). Then: kprof report FILE (--tree for\n"
     "the call tree), kprof export FILE --perfetto out.pftrace (or --chrome out.json)\n",
     1},
    {"merge", kp_cmd_merge, "one trace from per-rank or per-host traces, clocks aligned",
     "usage: kprof merge A.kprof B.kprof ... -o OUT.kprof [--reference FILE] [--force] [--json]\n"
     "\n"
     "Makes one trace of several (mpirun -n 16 kprof trace -o 'job-%r.kprof' -- prog writes one\n"
     "per rank): every process, event, metric, clock pair and note of each, strings shared.\n"
     "Traces of one boot of one host (their boot id) share CLOCK_MONOTONIC and are never\n"
     "shifted. Every other host is shifted onto the reference host's time base (the first\n"
     "input's, or --reference's) by the difference of the hosts' CLOCK_REALTIME - MONOTONIC\n"
     "offsets, estimated from the clock pairs its processes and kprof recorded at start and\n"
     "end; the uncertainty is the pairs' own plus their spread (a clock slewed during the run).\n"
     "This assumes the hosts' CLOCK_REALTIME agree (NTP, PTP). Each shift is said on stderr and\n"
     "kept in the trace (a note, and the hosts table). Traces of formats 1 and 2 hold no clock\n"
     "pairs: they are merged unshifted, with a note that their offset is unknown.\n"
     "A pid that an earlier input's process has (containers, other hosts) would mix two\n"
     "processes in reports: that input's pids become pid + k*4194304 (the smallest free ids\n"
     "where that would pass 2147483647, the largest pid trace viewers read), said in a note,\n"
     "with the system's pid kept in processes.os_pid. An input that is a merged trace brings\n"
     "its hosts rows (on the new time base) and its notes (prefixed with its path).\n"
     "\n"
     "  -o, --output FILE   the merged trace (required); written to a temporary and renamed\n"
     "  --reference FILE    the input whose host is the time base (default: the first)\n"
     "  --force             replace FILE if it exists (never one of the inputs)\n"
     "  --json              what was merged and shifted, as JSON on stdout\n"
     "\n"
     "Exit code 2 for a missing, damaged or foreign input, one of a newer kprof, or the same\n"
     "file given twice.\n"},
    {"report", kp_cmd_report, "a trace's tables and verdict, or its call tree and key averages",
     "usage: kprof report FILE [--trace] [--raw] [--json | --csv]\n"
     "       kprof report FILE --tree [--depth N] [--sort KEY] [--top N] [--raw] [--json | --csv]\n"
     "       kprof report FILE --by name|path [--sort KEY] [--top N] [--raw] [--json | --csv]\n"
     "\n"
     "Shows a trace the way Metal.jl's and CUDA.jl's @profile do: the header (wall time, events,\n"
     "records dropped); the host table (Time (%) of the wall, Total time, Calls, Time\n"
     "distribution mean ± std (min ‥ max), Name; polling and query calls hidden unless --raw);\n"
     "the device table of kernels, copies and fills with GPU busy time as the union of their\n"
     "intervals; launch latency (median and p95 of launch to start, queued to start and\n"
     "submitted to start, where the trace has them); NVTX ranges; then the verdict over the\n"
     "whole wall, over the active window (first to last device operation) and per top-level\n"
     "NVTX range: GPU busy, idle gaps and where the longest lies, launches per second, the\n"
     "share of dispatches under 0.05 ms, host synchronization, the largest host calls, and\n"
     "the sentence that follows (is the kernel even the problem?).\n"
     "A trace of a distributed job (processes with a rank: torchrun, mpirun, Slurm; one trace\n"
     "or kprof merge of per-rank files) adds a table per rank and per device (GPU busy as the\n"
     "union of its device work), NCCL/RCCL collectives as a table of their own, and the\n"
     "stragglers line: per step (an NVTX range on every rank, else each collective), which rank\n"
     "arrived last and how long the others waited in the collectives; in a merged trace,\n"
     "give or take the hosts' clock uncertainty (kprof merge's hosts table). A host is a boot\n"
     "(hosts that share a name are told apart by their boot id).\n"
     "On a terminal, rows at or above the 95th percentile of time are red, above the 75th\n"
     "yellow (NO_COLOR turns colour off).\n"
     "\n"
     "  --trace   chronological host and device rows; IDs correlate a call with its GPU work,\n"
     "            with launch geometry, registers, shared and local memory, size, throughput\n"
     "            and launch latency columns where the trace has them ('-' where a row has\n"
     "            none); with --json as host_trace and device_trace (not with --csv)\n"
     "  --raw     include polling and query calls (in the tables, the tree and key averages)\n"
     "  --json    the tables, launch latency and every verdict as JSON\n"
     "  --csv     the tables, launch latency and verdict rows as CSV\n"
     "\n"
     "--tree and --by show the call tree instead of the tables (not with --trace). A node is\n"
     "one call path, its instances on every thread and process added up: NVTX ranges on their\n"
     "thread, the API calls inside them, and under each call the kernels, copies and fills it\n"
     "launched (joined by correlation, whenever they ran); device work whose call was not\n"
     "recorded goes under (unattributed). Polling calls are left out unless --raw, and their\n"
     "time counts as their caller's own.\n"
     "  --tree        per node: calls, host time inclusive (Host incl) and exclusive of its\n"
     "                children (Host excl), GPU time attributed (its device work and all\n"
     "                below it), device operations; children indented under their parent\n"
     "  --depth N     with --tree: show N levels (1: the top level only)\n"
     "  --by name     key averages: one row per kind and name (all its paths together)\n"
     "  --by path     key averages: one row per call path\n"
     "                rows: kind, calls, total, self, GPU, min/mean/max, bytes where any\n"
     "  --sort KEY    children's (--tree) or rows' (--by) order, largest first: total\n"
     "                (default; host time of calls and ranges, device time of device work),\n"
     "                self (exclusive), gpu (attributed) or calls\n"
     "  --top N       --tree: the first N children of each node (a '… M more' line says what\n"
     "                is left out); --by: the first N rows\n"
     "  --json/--csv  the shown nodes or rows with every number in seconds; a tree node with\n"
     "                id, parent, depth and its path (README: 'Call tree and key averages')\n"},
    {"diff", kp_cmd_diff, "what changed between two traces, or two bench results, and is it real?",
     "usage: kprof diff A.kprof B.kprof [--by name|path] [--threshold P] [--fail-if-slower P]\n"
     "                                  [--raw] [--top N] [--json]\n"
     "       kprof diff A-bench.json B-bench.json [--threshold P] [--fail-if-slower P] [--json]\n"
     "       kprof diff @-1 @0   (or run ids: kprof diff 17 18)\n"
     "\n"
     "Two traces: per kernel (copy, fill), per host API call and per NVTX range, by name or by\n"
     "call path (--by path, as kprof report --by path), the calls, total and median of A and\n"
     "of B and the change (B - A, B/A), the largest change of total time first; a row only one\n"
     "trace has is listed as only in A or only in B. Where A and B each have 5 instances of a\n"
     "row or more, the change is judged as kprof bench judges one: the 95% confidence interval\n"
     "of B/A of the medians (an unpaired bootstrap over the instances' durations, seeded: the\n"
     "same traces give the same answer) and a verdict: SAME (the interval inside\n"
     "±--threshold), FASTER or SLOWER (wholly outside it) or UNSURE (it straddles the\n"
     "threshold). With fewer instances the change alone, marked n too small: no verdict.\n"
     "Then each trace's verdict (the one kprof report prints) over the wall and over the\n"
     "active window, and whether it changed.\n"
     "Two results: two bench.json files (kprof bench --json), point by point (axes and cache\n"
     "state): each side's median and B/A with its interval and verdict, as kprof bench\n"
     "--compare computes them (unpaired); points only one file has are listed as such. Or two\n"
     "runs of kprof's history: @0 is the newest, @-1 the one before, a number is a run's id\n"
     "(to diff a file named like one, write ./17); the fields the two runs differ in (commit,\n"
     "options, geometry, device...) are listed above the comparison.\n"
     "A file is a trace when it is an SQLite file (.kprof), a result when it is JSON with\n"
     "\"kind\": \"bench\"; a trace and a result do not compare (exit 2).\n"
     "\n"
     "  --by name|path      traces: rows by name (default) or by call path\n"
     "  --threshold P       the SAME band, in percent (default 1, as kprof bench)\n"
     "  --fail-if-slower P  exit 5 when a kernel, copy or fill (traces) or a point (results) is\n"
     "                      SLOWER by more than P percent: its whole interval above 1 + P%\n"
     "  --raw               traces: include polling and query calls\n"
     "  --top N             traces: show the first N rows of each table\n"
     "  --json              every row, verdict and number as JSON\n"
     "\n"
     "Exit code 5 when --fail-if-slower finds a regression; 2 for a missing, damaged or foreign\n"
     "file, a trace given with a result, or a JSON file that is not a bench result.\n"},
    {"export", kp_cmd_export, "a trace for other tools (Perfetto, Chrome, Hatchet, JSON, CSV)",
     "usage: kprof export FILE -o OUT [--raw] [--force]\n"
     "       kprof export FILE (--chrome OUT.json | --perfetto OUT.pftrace) [--force]\n"
     "       kprof export FILE (--hatchet OUT.json | --json OUT.json | --csv OUT.csv) [--raw]\n"
     "                         [--force]\n"
     "\n"
     "Writes the trace for another tool, one format per run. -o OUT takes the format from\n"
     "OUT's name (case aside): .json Chrome, .pftrace, .perfetto-trace or .pb Perfetto, .csv\n"
     "the call tree's CSV, .hatchet.json or .hatchet Hatchet. Any other name ('-' too) gets a\n"
     "timeline: Chrome JSON, or Perfetto when the trace holds more than 2000000 events (some\n"
     "450 MiB of JSON: browsers' JSON loaders stop near 512 MiB; $KPROF_CHROME_MAX_EVENTS sets\n"
     "the number), said in a note on stderr. --chrome on a trace that large still writes JSON\n"
     "and warns. For a timeline viewer:\n"
     "  --chrome: Chrome Trace Event JSON (Perfetto UI, chrome://tracing): a track per host\n"
     "    thread (API calls, NVTX ranges as slices), a process per GPU with a track per stream\n"
     "    or queue, and a flow arrow from each API call to the GPU work it launched.\n"
     "  --perfetto: a native Perfetto trace (protobuf, Perfetto UI and trace_processor), the\n"
     "    same timeline at under half the size: each process with its host threads and, under\n"
     "    it, a track per GPU and per stream or queue ('GPU 0 · stream 7'); slices for calls,\n"
     "    kernels, copies, fills, syncs and NVTX ranges, instants for NVTX marks, flows from\n"
     "    calls to their GPU work, launch geometry and waits as arguments; times in ns on\n"
     "    CLOCK_MONOTONIC. Slices that overlap on one track without nesting go to a track\n"
     "    under it, '(overlap 1)'.\n"
     "The call tree (see kprof help report, --tree), whole, children by total time:\n"
     "  --hatchet: Hatchet's literal format (hatchet.GraphFrame.from_literal), under one root\n"
     "    named after the traced command; metrics time (inc), time, calls, gpu_time (inc),\n"
     "    gpu_time, bytes and flops, times in seconds.\n"
     "  --json, --csv: what kprof report FILE --tree --json (or --csv) prints: every node with\n"
     "    id, parent, depth, path and its numbers.\n"
     "\n"
     "  -o, --output OUT the output file, its format from its name (above)\n"
     "  --chrome OUT     the output file; '-' for standard output. A FIFO or a character\n"
     "  --perfetto OUT   device is written in place; a symbolic link is followed to its\n"
     "  --hatchet OUT    target; a regular file is written to a temporary beside it and\n"
     "  --json OUT       renamed when whole\n"
     "  --csv OUT\n"
     "  --raw            with the call tree: include polling and query calls\n"
     "  --force          replace OUT if it exists (never the trace itself)\n"
     "\n"
     "Text that is not UTF-8 (names, commands, paths) is written as \\u00XX of each such byte in\n"
     "JSON, as U+FFFD in CSV and the Perfetto trace.\n"},
    {"history", kp_cmd_history, "every result run, sweep and bench measured, newest first",
     "usage: kprof history [KERNEL] [--json] [--limit N]\n"
     "\n"
     "Lists the results `kprof run`, `kprof sweep` and `kprof bench` recorded in kprof's store\n"
     "($KPROF_STORE, default ~/.local/share/kprof/kprof.db), newest first: id, when (local\n"
     "time), kind, kernel, device, grid, tg, median ms (a sweep's best point; a bench's first\n"
     "point's first kernel), samples, and the git commit of the source's work tree (short;\n"
     "\"*\" when it had changes to tracked files, \"-\" when the source is in no work tree).\n"
     "Each record also keeps the device's backend and driver, kprof's version, the source's\n"
     "path and FNV-1a 64 hash, the compiler options, the buffers SPEC, every sample of the\n"
     "main measurement and the command's whole --json result. Other commands name a record\n"
     "by its id (17) or by its place: @0 the newest, @-1 the one before, ...\n"
     "Every successful run, sweep and bench is recorded; a store that cannot be written gets\n"
     "a warning, never a failed command; KPROF_HISTORY=0 records nothing. An older store is\n"
     "upgraded in place, keeping what it holds; a store of a newer kprof is refused (exit 2)\n"
     "and left as it is.\n"
     "\n"
     "  KERNEL       only the runs of this kernel (the entry's name)\n"
     "  --json       an array of objects: every column (id, kind, at in unix seconds, device,\n"
     "               backend, device_key, driver, kprof_version, kernel, target, source_path,\n"
     "               source_hash, options, grid, tg, buffers, git_commit, git_dirty, median_ms,\n"
     "               min_ms, nsamples) and samples (ms); null where unknown\n"
     "  --limit N    the newest N only (default: all)\n"},
    {"notes", kp_cmd_notes, "a findings log: notes that keep the numbers they came from",
     "usage: kprof notes add TEXT [--from FILE|HISTORY-ID] [--kernel NAME] [--json]\n"
     "       kprof notes list [--kernel NAME] [--json]\n"
     "       kprof notes search WORDS... [--json]\n"
     "       kprof notes show ID [--json]\n"
     "       kprof notes export FILE [--force] [--json]\n"
     "       kprof notes import FILE [--json]\n"
     "\n"
     "Keeps findings in kprof's store ($KPROF_STORE, default ~/.local/share/kprof/kprof.db),\n"
     "each with the evidence it was made from: kernel, device, grid, threadgroup, median device\n"
     "time and commit.\n"
     "\n"
     "  add     TEXT is the finding ('-': read from standard input; a TEXT starting with '-'\n"
     "          goes after --). --from takes the evidence from a run.json (kprof run --json),\n"
     "          a sweep.json (its best point), a bench.json (its first point's first kernel,\n"
     "          or --kernel's) or a run of the history: an id (17) or @N (@0 the newest, @-1\n"
     "          the one before; a file named like one is ./17). The commit is the history\n"
     "          record's, or HEAD of the git work tree holding the file (none outside one).\n"
     "          What else the source says (backend, timer, min and p90, ~GB/s, the sweep's\n"
     "          curve, a comparison's verdict) is kept in the note's data; samples are not.\n"
     "  list    every note, oldest first\n"
     "  search  the notes whose text or kernel match, best first (SQLite FTS5, bm25): every\n"
     "          word must match; \"a phrase\" in double quotes, OR, NOT, prefix*, kernel:NAME.\n"
     "          A query FTS5 cannot parse is refused (exit 2): quote a word holding other\n"
     "          characters ('\"tg-256\"')\n"
     "  show    one note with everything it carries; a missing ID is exit 2\n"
     "  export  every note to FILE as JSON ('-': standard output), to share them in a\n"
     "          repository; the store's ids are left out\n"
     "  import  the notes of such a FILE, skipping those already present (the same text, time\n"
     "          and kernel), and says how many it added; a file with any bad note adds none\n"
     "          (exit 2)\n"
     "\n"
     "  --from SRC     add: a run.json, sweep.json or bench.json, or a HISTORY-ID\n"
     "  --kernel NAME  add: the kernel the note is about (with --from it must be the one\n"
     "                 measured; it picks one of a bench.json's kernels); list: only its notes\n"
     "  --json         machine-readable output: a note, {\"count\", \"notes\"}, or what an\n"
     "                 export or import did\n"
     "  --force        export: replace an existing FILE\n"
     "\n"
     "Text is kept as UTF-8 (a byte that is not well-formed UTF-8 becomes U+FFFD).\n"},
    {"help", kp_cmd_help, "help for a command: kprof help CMD", "usage: kprof help [CMD]\n"},
    {"version", kp_cmd_version, "print kprof's version", "usage: kprof version\n"},
    {NULL, NULL, NULL, NULL},
};

const kp_command *kp_command_find(const char *name)
{
    for (const kp_command *c = kp_commands; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

static void kp_main_usage(FILE *f)
{
    fprintf(f, "kprof %s — what a GPU kernel really costs on the device, and whether it is\n"
               "the problem at all.\n\n"
               "usage: kprof [--version] [--help] COMMAND [ARGS]\n\ncommands:\n",
            kprof_version());
    for (const kp_command *c = kp_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "\n`kprof help COMMAND` or `kprof COMMAND --help` for a command's options.\n\n"
               "exit codes:\n"
               "  0  success\n"
               "  1  runtime failure (allocation, an I/O error, backend error)\n"
               "  2  usage error or bad input (arguments, SPEC, kernel name; an input file that\n"
               "     is missing, not a regular file, damaged, truncated or not kprof's; an output\n"
               "     kprof refuses to write)\n"
               "  3  backend or device unavailable\n"
               "  4  kernel fault, compile failure or timeout\n"
               "  5  a comparison found a regression (kprof bench or kprof diff --fail-if-slower)\n"
               "  128+N  ended by signal N (SIGINT, SIGTERM, SIGHUP); no temporary file is left\n");
}

static int kp_cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        kp_main_usage(stdout);
        return 0;
    }
    const kp_command *c = kp_command_find(argv[1]);
    if (!c) return kp_cli_usage_error(NULL, "no command '%s' (kprof --help lists them)", argv[1]);
    return kp_cli_help(c);
}

static int kp_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("kprof %s\n", kprof_version());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        kp_main_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        kp_main_usage(stdout);
        return kp_cli_exit(0);
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        return kp_cli_exit(kp_cmd_version(0, NULL));
    const kp_command *c = kp_command_find(cmd);
    if (!c) {
        kp_cli_usage_error(NULL, "no command '%s' (kprof --help lists them)", cmd);
        return 2;
    }
    for (int i = 2; i < argc && !c->runs_a_command; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return kp_cli_exit(kp_cli_help(c));
    }
    if (!c->runs_a_command) kp_cli_signals_install(); /* trace handles its own signals */
    return kp_cli_exit(c->run(argc - 1, argv + 1));
}
