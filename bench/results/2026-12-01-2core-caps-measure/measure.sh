#!/bin/bash
# Before/after of `kprof caps --measure` on this machine: old (8cc7a20) and new binaries, quiet
# (no load of ours) and with a busy loop on one core.
out=/tmp/c-measure; rm -rf $out; mkdir -p $out
export KPROF_HOME=$out/home KPROF_CACHE_DIR=$out/cache
one() { # cond which i bin
  local f=$out/$1-$2-$3
  local l0=$(cut -d' ' -f1 /proc/loadavg)
  KPROF_STORE=$f.db /usr/bin/time -f "%e" -o $f.time $4 caps --measure --backend opencl --device 0 --json > $f.json 2> $f.err
  local l1=$(cut -d' ' -f1 /proc/loadavg)
  python3 - "$1" "$2" "$3" "$(cat $f.time | tail -1)" "$l0" "$l1" "$f.json" <<'PY' >> $out/table.txt
import json,sys
c,w,i,t,l0,l1,f=sys.argv[1:]
d=json.load(open(f))
print(c,w,i,"wall_s",t,"load",l0,l1,"ceiling_gbs",round(d["ceiling_gb_per_s"],2),"best",d["method"].split(" over")[0].split("of ")[-1],"fma",round(d["fma_gflop_per_s"] or 0,2),"bytes",d["ceiling_bytes"]>>20)
PY
}
OLD=OLD/build/kprof NEW=build/kprof
for cond in quiet busy; do
  if [ $cond = busy ]; then timeout 900 sh -c 'while :; do :; done' & BL=$!; fi
  if [ $cond = quiet ]; then one $cond new 1 $NEW; one $cond old 1 $OLD; one $cond new 2 $NEW; one $cond old 2 $OLD; one $cond new 3 $NEW; else one $cond new 1 $NEW; one $cond old 1 $OLD; one $cond new 2 $NEW; one $cond new 3 $NEW; fi
  if [ $cond = busy ]; then kill $BL; fi
done
echo done >> $out/table.txt
