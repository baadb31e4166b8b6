cd /tmp
nvcc -O2 -arch=sm_90 -o ov $W/bench/programs/overhead.cu
gcc -O2 -shared -fPIC -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include $W/bench/programs/bare_collector.c -L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 -o bare.so
K=$W/build/kprof
for i in 1 2 3; do
 echo "== round $i"
 /usr/bin/time -f "plain %e s" ./ov launch 200000
 CUDA_INJECTION64_PATH=/tmp/bare.so /usr/bin/time -f "bare %e s" ./ov launch 200000 2>&1 | grep -v collector
 KPROF_TRACE_TIMES=1 /usr/bin/time -f "kprof %e s" $K trace -f -o /tmp/a.kprof -- ./ov launch 200000 2>&1 | grep -v "^kprof: [0-9]"
 KPROF_OPENCL_INTERCEPT=layer KPROF_TRACE_TIMES=1 /usr/bin/time -f "kprof-layer-only %e s" $K trace -f -o /tmp/a.kprof -- ./ov launch 200000 2>&1 | grep -v "^kprof: [0-9]"
 KPROF_TRACE_LIVE=0 KPROF_TRACE_TIMES=1 /usr/bin/time -f "kprof-after %e s" $K trace -f -o /tmp/a.kprof -- ./ov launch 200000 2>&1 | grep -v "^kprof: [0-9]"
done
which perf && { KPROF_TRACE_TIMES=1 perf record -F 2000 -g -o /tmp/p.data -- $K trace -f -o /tmp/a.kprof -- ./ov launch 200000 >/dev/null 2>&1; perf report -i /tmp/p.data --no-children --sort comm,dso,sym --stdio 2>/dev/null | grep -v "^#" | grep "%" | head -40; }
nproc; lscpu | grep -E "Thread|Core|Socket|MHz"
