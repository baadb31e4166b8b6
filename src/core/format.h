/*
 * format.h — how kprof writes numbers for people: durations with a unit picked from the value
 * (ns, µs, ms, s; two decimals, shortest form, as the seeds print them), byte sizes, rates.
 */
#ifndef KP_CORE_FORMAT_H
#define KP_CORE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* "1.25 ms", "812 ns", "3.5 µs", "2.01 s". Returns buf. */
char *kp_format_duration(double seconds, char *buf, size_t n);
/* A time the lab measured, given in milliseconds, for tables and panels: the unit picked from
 * the value (ns, µs, ms, s) and four significant figures, whole nanoseconds below a
 * microsecond: "726 ns", "12.30 µs", "1.235 ms", "2.000 s" (a value rounding to 1000 of its
 * unit takes the next: "1.000 ms"). Returns buf. */
char *kp_format_ms(double ms, char *buf, size_t n);
/* kp_format_ms right-aligned in a table's column of width characters (µ counts as one, as a
 * terminal shows it, where printf's widths count bytes). Returns buf. */
char *kp_format_ms_cell(double ms, int width, char *buf, size_t n);
/* "256 B", "48 KiB", "1.5 GiB". Returns buf. */
char *kp_format_bytes(uint64_t bytes, char *buf, size_t n);
/* A count with an SI prefix, shortest two decimals: "950", "12.5 k", "2 G", "1.25 T" (flops).
 * Returns buf. */
char *kp_format_si(double v, char *buf, size_t n);
/* A rate without its unit, to three figures or more: "0.25", "12.5", "1234" (GFLOP/s, GB/s).
 * Returns buf. */
char *kp_format_rate(double v, char *buf, size_t n);
/* Shortest "%.2f" form: trailing zeros and a trailing dot removed ("1.50" -> "1.5"). */
char *kp_format_2dp(double v, char *buf, size_t n);
/* The note of a damaged trace's n events that end before they start, as report, --tree/--by
 * and diff print it: "3 events end before they start (a damaged trace): their durations count
 * as 0" (base/util.h's kp_ns_span). */
char *kp_format_ends_before_start(uint64_t n, char *buf, size_t size);

#endif
