/*
 * run.c — the words `kprof run`, its sweep and `kprof bench` share (run.h): dimensions and the
 * reflection's limits for people, the Counters block and its one-line form, the time budget a
 * run goes by, and leaving after a kernel timeout.
 */
#include "base/outfile.h"
#include "base/util.h"
#include "core/format.h"
#include "core/readings.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/run.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void kp_dims_text(const uint64_t *v, int dims, char *buf, size_t n)
{
    if (dims == 1)
        snprintf(buf, n, "%llu", (unsigned long long)v[0]);
    else if (dims == 2)
        snprintf(buf, n, "%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1]);
    else
        snprintf(buf, n, "%llux%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1],
                 (unsigned long long)v[2]);
}

void kp_run_replay_print(FILE *o, const kp_lab_info *info, int moved)
{
    if (!info->replay) return;
    const kp_launch *l = &info->replay_launch;
    char g[64], t[64];
    kp_dims_text(l->grid, l->dims, g, sizeof g);
    kp_dims_text(l->tg, l->dims, t, sizeof t);
    fprintf(o, "  %-18s %s (grid %s, tg %s", "replay of", info->replay_dir, g, t);
    if (l->dyn_local) fprintf(o, ", smem %llu B", (unsigned long long)l->dyn_local);
    fprintf(o, ")\n");
    fprintf(o, "  %-18s %s\n", "output check", info->replay_text);
    if (moved)
        fprintf(o,
                "  %-18s the check ran at the captured geometry only: the output at any other "
                "grid, tg or smem is not checked\n",
                "");
    uint64_t local = 0;
    for (int i = 0; moved && info->spec && i < info->spec->count; i++)
        if (info->spec->args[i].kind == KP_ARG_LOCAL) local += info->spec->args[i].local_bytes;
    if (local)
        fprintf(o,
                "  %-18s its __local arguments keep their captured sizes (%llu bytes in all): "
                "a larger tg than the captured one may overrun them\n",
                "", (unsigned long long)local);
    /* What the capture could not hold: the replay may not be faithful, and says why. */
    for (int i = 0; i < info->replay_missing && i < 4; i++)
        fprintf(o, "  %-18s %s\n", i ? "" : "not captured", info->replay_missing_lines[i]);
    if (info->replay_missing > 4)
        fprintf(o, "  %-18s %d more in %s/not-captured.txt\n", "", info->replay_missing - 4,
                info->replay_dir);
    fprintf(o,
            "  %-18s the timed dispatches start from the state the checked one left (as "
            "ncu's replay)\n",
            "");
}

void kp_run_reflection_text(const kp_reflection *r, const kp_device_info *dev, char *buf, size_t n)
{
    char rule[256];
    kp_tg_rule_text(r, rule, sizeof rule);
    if (r->tg_rule == KP_TG_RULE_REQUIRED)
        snprintf(buf, n, "%s, device max %llu", rule, (unsigned long long)dev->max_tg);
    else if (r->tg_rule == KP_TG_RULE_MAX && kp_reflection_limit_declared(r))
        snprintf(buf, n, "max tg %llu (%s; device %llu)", (unsigned long long)r->max_tg,
                 r->tg_rule_from, (unsigned long long)dev->max_tg);
    else if (r->tg_rule == KP_TG_RULE_MAX)
        snprintf(buf, n, "max tg %llu (declared %llu by %s; device %llu)",
                 (unsigned long long)r->max_tg, (unsigned long long)kp_tg_rule_threads(r),
                 r->tg_rule_from, (unsigned long long)dev->max_tg);
    else
        snprintf(buf, n, "max tg %llu (device %llu)", (unsigned long long)r->max_tg,
                 (unsigned long long)dev->max_tg);
}

void kp_run_abandon(const kp_error *err)
{
    int rc = kp_cli_fail(err);
    kp_output_unlink_all(); /* an output opened before the run (--plot) */
    fflush(NULL);
    _exit(rc);
}

/* A standard value for people: its number in its unit, or "n/a (not on this device)". */
static void kp_counter_text(const kp_counters *c, kp_counter_id id, char *buf, size_t n)
{
    const kp_counter_value *v = &c->v[id];
    char a[64];
    if (!v->known)
        snprintf(buf, n, "n/a (not on this device)");
    else if (kp_counter_unit_of(id) == KP_COUNTER_UNIT_BYTES)
        snprintf(buf, n, "%s", kp_format_bytes((uint64_t)v->value, a, sizeof a));
    else if (kp_counter_unit_of(id) == KP_COUNTER_UNIT_PERCENT)
        snprintf(buf, n, "%.1f%%", v->value);
    else
        snprintf(buf, n, "%s", kp_format_si(v->value, a, sizeof a));
}

void kp_run_print_counters(FILE *o, const kp_run_result *r)
{
    const kp_counters *c = r->counters;
    if (!c || !c->have) return;
    const kp_readings_input *in = &r->readings_in;
    const kp_readings *rd = &r->readings;
    char a[96], b[96], x[96];
    fprintf(o, "counters (one replayed dispatch; rates at the median of the timed ones):\n");
    kp_counter_text(c, KP_COUNTER_DRAM_READ, a, sizeof a);
    kp_counter_text(c, KP_COUNTER_DRAM_WRITE, b, sizeof b);
    fprintf(o, "  %-18s %s read · %s written", "DRAM", a, b);
    if (rd->measured) {
        fprintf(o, " · %.1f GB/s measured", rd->measured_gbps);
        if (in->ceiling_gbs > 0)
            fprintf(o, " (%.0f%% of the measured ceiling, %.0f GB/s)", 100 * rd->measured_fraction,
                    in->ceiling_gbs);
    }
    fprintf(o, "\n");
    if (rd->dram_cold)
        fprintf(o,
                "  %-18s DRAM bytes as from a cold L2, as ncu reads them; the timed dispatches "
                "ran with a warm L2 (the data fits in the cache): no measured GB/s\n",
                "");
    char note[700];
    if (kp_counters_dram_note(c, note, sizeof note)[0]) fprintf(o, "  %-18s %s\n", "", note);
    if (rd->traffic != KP_TRAFFIC_UNKNOWN)
        fprintf(o, "  %-18s %.2f× the %s %s (~GB/s touched %.1f)\n", "vs the estimate",
                rd->bytes_ratio, kp_format_bytes(in->bytes, x, sizeof x),
                in->bytes_assumed ? "its buffers hold" : "of --bytes", in->gbps);
    kp_counter_text(c, KP_COUNTER_L2_READ, a, sizeof a);
    kp_counter_text(c, KP_COUNTER_L2_WRITE, b, sizeof b);
    kp_counter_text(c, KP_COUNTER_L2_HIT_RATE, x, sizeof x);
    fprintf(o, "  %-18s %s read · %s written · hit rate %s\n", "L2", a, b, x);
    kp_counter_text(c, KP_COUNTER_L1_HIT_RATE, a, sizeof a);
    fprintf(o, "  %-18s %s\n", "L1 hit rate", a);
    kp_counter_text(c, KP_COUNTER_OCCUPANCY, a, sizeof a);
    fprintf(o, "  %-18s %s achieved", "occupancy", a);
    if (r->refl.have_occupancy) fprintf(o, " (theoretical %.0f%%)", 100 * r->refl.occupancy);
    fprintf(o, "\n");
    kp_counter_text(c, KP_COUNTER_SM_THROUGHPUT, a, sizeof a);
    fprintf(o, "  %-18s %s of peak\n", "SM throughput", a);
    kp_counter_text(c, KP_COUNTER_PIPE_FMA, a, sizeof a);
    kp_counter_text(c, KP_COUNTER_PIPE_ALU, b, sizeof b);
    kp_counter_text(c, KP_COUNTER_PIPE_TENSOR, x, sizeof x);
    int top = kp_counters_top_pipe(c);
    fprintf(o, "  %-18s FMA %s · ALU %s · tensor %s", "pipes", a, b, x);
    if (top >= 0) fprintf(o, " (busiest: %s)", kp_counter_label((kp_counter_id)top));
    fprintf(o, "\n");
    kp_counter_text(c, KP_COUNTER_INSTRUCTIONS, a, sizeof a);
    fprintf(o, "  %-18s %s%s\n", "instructions", a,
            c->v[KP_COUNTER_INSTRUCTIONS].known ? " warp instructions" : "");
    kp_counters_flops f;
    kp_counters_flops_of(c, &f);
    if (f.have) {
        char f32[64], f64[64] = "n/a", f16[64] = "n/a";
        kp_format_si(f.fp32, f32, sizeof f32);
        if (f.fp64_known) kp_format_si(f.fp64, f64, sizeof f64);
        if (f.fp16_known) kp_format_si(f.fp16, f16, sizeof f16);
        fprintf(o, "  %-18s %s (fp32 %s, fp64 %s, fp16 %s) · %.4g GFLOP/s", "FLOPs",
                kp_format_si(f.total, a, sizeof a), f32, f64, f16, rd->gflops);
        if (in->measured.peak_gflops > 0)
            fprintf(o, " (%.0f%% of the FP32 peak, %.0f GFLOP/s)", 100 * rd->flop_fraction,
                    in->measured.peak_gflops);
        fprintf(o, "\n");
    } else {
        fprintf(o, "  %-18s n/a (not on this device)\n", "FLOPs");
    }
    if (rd->measured) {
        fprintf(o, "  %-18s ", "roofline");
        if (rd->have_intensity)
            fprintf(o, "%.3g FLOP/byte", rd->intensity);
        else
            fprintf(o, "intensity n/a");
        if (rd->have_ridge)
            fprintf(o, " · ridge %.3g FLOP/byte", rd->ridge);
        else
            fprintf(o, " · no FLOP peak measured (kprof caps --measure)");
        fprintf(o, " · bound: %s\n", kp_bound_name(rd->bound));
    }
    if (r->refl.have_registers)
        fprintf(o, "  %-18s %d per thread · local (spill) memory %s per thread\n", "registers",
                r->refl.registers, kp_format_bytes(r->refl.private_bytes, a, sizeof a));
    for (int i = 0; i < c->nraw; i++) {
        if (c->raw[i].known)
            fprintf(o, "  %-18s %.6g\n", c->raw[i].name, c->raw[i].value);
        else
            fprintf(o, "  %-18s n/a (not on this device)\n", c->raw[i].name);
    }
}

void kp_run_counters_line(const kp_counters *c, const kp_readings_input *in, const kp_readings *r,
                          char *buf, size_t n)
{
    if (!c || !c->have) {
        snprintf(buf, n, "unavailable: %s", c && c->why_not[0] ? c->why_not : "not read");
        return;
    }
    kp_str s = {0};
    if (r->measured) {
        kp_str_printf(&s, "DRAM %.1f GB/s", r->measured_gbps);
        if (in->ceiling_gbs > 0)
            kp_str_printf(&s, " (%.0f%% of the ceiling)", 100 * r->measured_fraction);
        if (r->traffic != KP_TRAFFIC_UNKNOWN)
            kp_str_printf(&s, " · %.2f× the estimated bytes", r->bytes_ratio);
    } else if (r->dram_cold) {
        char a[64];
        kp_str_printf(&s,
                      "DRAM %s as from a cold L2, as ncu reads them (timed with a warm L2, the "
                      "data fits in the cache: no GB/s)",
                      kp_format_bytes((uint64_t)r->dram_bytes, a, sizeof a));
        if (r->traffic != KP_TRAFFIC_UNKNOWN)
            kp_str_printf(&s, " · %.2f× the estimated bytes", r->bytes_ratio);
    } else {
        kp_str_append(&s, "DRAM n/a");
    }
    char note[700];
    if (kp_counters_dram_note(c, note, sizeof note)[0]) kp_str_printf(&s, " · %s", note);
    if (c->v[KP_COUNTER_OCCUPANCY].known)
        kp_str_printf(&s, " · occupancy %.0f%%", c->v[KP_COUNTER_OCCUPANCY].value);
    if (c->v[KP_COUNTER_SM_THROUGHPUT].known)
        kp_str_printf(&s, " · SM %.0f%%", c->v[KP_COUNTER_SM_THROUGHPUT].value);
    if (in->measured.have_flops) kp_str_printf(&s, " · %.4g GFLOP/s", r->gflops);
    kp_str_printf(&s, " · bound: %s", kp_bound_name(r->bound));
    for (int i = 0; i < c->nraw; i++) {
        if (c->raw[i].known)
            kp_str_printf(&s, " · %s %.6g", c->raw[i].name, c->raw[i].value);
        else
            kp_str_printf(&s, " · %s n/a (not on this device)", c->raw[i].name);
    }
    snprintf(buf, n, "%s", s.data ? s.data : "");
    kp_str_free(&s);
}

double kp_run_budget(const kp_run_args *a)
{
    return a->iters_set ? 0 : a->time_budget_s;
}
