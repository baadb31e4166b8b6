/*
 * format.c — durations, sizes and decimals for human-readable output (see format.h).
 */
#include "core/format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

char *kp_format_2dp(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.2f", v);
    if (strchr(buf, '.')) {
        size_t len = strlen(buf);
        while (len > 0 && buf[len - 1] == '0')
            buf[--len] = '\0';
        if (len > 0 && buf[len - 1] == '.') buf[--len] = '\0';
    }
    return buf;
}

char *kp_format_duration(double seconds, char *buf, size_t n)
{
    char num[64];
    double a = fabs(seconds);
    const char *unit;
    double v;
    if (a < 1e-6)
        v = seconds * 1e9, unit = "ns";
    else if (a < 1e-3)
        v = seconds * 1e6, unit = "µs";
    else if (a < 1)
        v = seconds * 1e3, unit = "ms";
    else
        v = seconds, unit = "s";
    snprintf(buf, n, "%s %s", kp_format_2dp(v, num, sizeof num), unit);
    return buf;
}

/* v as kp_format_ms prints it in unit u (0: ns): whole ns, else four significant figures. */
static double kp_format_ms_shown(double v, int u)
{
    double a = fabs(v);
    if (u == 0 || a >= 1000) return round(a);
    return a >= 100 ? round(a * 10) / 10 : a >= 10 ? round(a * 100) / 100 : round(a * 1000) / 1000;
}

char *kp_format_ms(double ms, char *buf, size_t n)
{
    static const char *const units[] = {"ns", "µs", "ms", "s"};
    double v = ms * 1e6; /* ns */
    int u = 0;
    while (u < 3 && kp_format_ms_shown(v, u) >= 1000)
        v /= 1000, u++;
    double a = fabs(v);
    const char *fmt = u == 0 || a >= 1000 ? "%.0f %s"
                      : a >= 100          ? "%.1f %s"
                      : a >= 10           ? "%.2f %s"
                                          : "%.3f %s";
    snprintf(buf, n, fmt, v, units[u]);
    return buf;
}

char *kp_format_ms_cell(double ms, int width, char *buf, size_t n)
{
    char t[64];
    kp_format_ms(ms, t, sizeof t);
    int chars = 0;
    for (const char *p = t; *p; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    int pad = width > chars ? width - chars : 0;
    snprintf(buf, n, "%*s%s", pad, "", t);
    return buf;
}

char *kp_format_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    char num[64];
    if (u == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, n, "%s %s", kp_format_2dp(v, num, sizeof num), units[u]);
    return buf;
}

char *kp_format_si(double v, char *buf, size_t n)
{
    static const char *prefixes[] = {"", " k", " M", " G", " T", " P", " E"};
    double a = fabs(v);
    int p = 0;
    while (a >= 1000 && p < 6)
        a /= 1000, v /= 1000, p++;
    char num[64];
    snprintf(buf, n, "%s%s", kp_format_2dp(v, num, sizeof num), prefixes[p]);
    return buf;
}

char *kp_format_rate(double v, char *buf, size_t n)
{
    double a = fabs(v);
    snprintf(buf, n, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : "%.2f", v);
    return buf;
}

char *kp_format_ends_before_start(uint64_t n, char *buf, size_t size)
{
    int one = n == 1;
    snprintf(buf, size, "%llu event%s before %s start (a damaged trace): %s duration%s as 0",
             (unsigned long long)n, one ? " ends" : "s end", one ? "it" : "they",
             one ? "its" : "their", one ? " counts" : "s count");
    return buf;
}
