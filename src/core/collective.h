/*
 * collective.h — whether a kernel is a collective of a communication library (NCCL, RCCL) and
 * which one, by its name: the reports of a distributed job show collectives as their own class,
 * apart from compute kernels, since an NCCL kernel's time on a rank that arrived early is mostly
 * spent waiting for the last rank to join (analysis/trace_job.h).
 *
 * A collective is a kernel whose name starts with `ncclKernel` or `ncclDevKernel` (NCCL, and
 * RCCL, which keeps NCCL's names), or `rcclKernel`, or names `nccl` or `rccl` (any case) together
 * with an operation: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv (Send,
 * Recv), AllToAll. Names may be demangled ("ncclKernel_AllReduce_RING_LL_Sum_float(...)") or
 * NCCL 2.19's ("ncclDevKernel_AllReduce_Sum_f32_RING_LL"); a collective whose name says no
 * operation (ncclDevKernel_Generic) is KP_COLLECTIVE_OTHER.
 */
#ifndef KP_CORE_COLLECTIVE_H
#define KP_CORE_COLLECTIVE_H

/*
 * X(NAME, name, keyword) — the operations, in the order a name is matched against them (so
 * AllReduce and ReduceScatter are found before Reduce); keyword is what the kernel's name holds
 * (matched in any case), name what the reports say.
 */
#define KP_COLLECTIVE_OP_LIST(X)                                                                   \
    X(ALL_REDUCE, "all-reduce", "allreduce")                                                       \
    X(ALL_GATHER, "all-gather", "allgather")                                                       \
    X(REDUCE_SCATTER, "reduce-scatter", "reducescatter")                                           \
    X(ALL_TO_ALL, "all-to-all", "alltoall")                                                        \
    X(BROADCAST, "broadcast", "broadcast")                                                         \
    X(REDUCE, "reduce", "reduce")                                                                  \
    X(SEND_RECV, "send-recv", "sendrecv")                                                          \
    X(SEND, "send", "send")                                                                        \
    X(RECV, "recv", "recv")

typedef enum kp_collective_op {
    KP_COLLECTIVE_NONE = 0, /* not a collective */
#define KP_COLLECTIVE_ENUM_(NAME, name, keyword) KP_COLLECTIVE_##NAME,
    KP_COLLECTIVE_OP_LIST(KP_COLLECTIVE_ENUM_)
#undef KP_COLLECTIVE_ENUM_
        KP_COLLECTIVE_OTHER, /* a collective library's kernel that names no operation */
    KP_COLLECTIVE_OP_COUNT
} kp_collective_op;

/* The operation of a kernel named `name` (KP_COLLECTIVE_NONE for NULL and for a kernel that is
 * no collective). */
kp_collective_op kp_collective_classify(const char *name);

/* "all-reduce", ..., "collective" for OTHER, "" for NONE and out-of-range numbers. */
const char *kp_collective_op_name(kp_collective_op op);

#endif
