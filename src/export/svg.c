/*
 * svg.c — the sweep plot as SVG (see svg.h): x is the threadgroup size (equally spaced, in
 * sweep order), the left axis device ms (GPU ms on a GPU) from zero, the right axis occupancy in
 * percent.
 */
#include "export/svg.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define KP_W 760.0
#define KP_H 440.0
#define KP_L 78.0 /* left margin */
#define KP_R 78.0 /* right margin */
#define KP_T 56.0 /* top margin */
#define KP_B 70.0 /* bottom margin */

/* A round axis maximum at or above v, and its tick step (5 ticks). */
static double kp_nice_max(double v, double *step)
{
    if (!(v > 0)) v = 1;
    double mag = pow(10, floor(log10(v)));
    static const double mults[] = {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10};
    double top = mag * 10;
    for (size_t i = 0; i < sizeof mults / sizeof mults[0]; i++) {
        if (mag * mults[i] >= v) {
            top = mag * mults[i];
            break;
        }
    }
    *step = top / 5;
    return top;
}

char *kp_svg_sweep(const char *title, int is_gpu, const kp_plot_point *pts, int n)
{
    kp_svg_labels labels = {"threads per threadgroup (tg)",
                            is_gpu ? "GPU time per dispatch (ms)" : "device time per dispatch (ms)",
                            "median", "min"};
    return kp_svg_plot(title, &labels, pts, n);
}

char *kp_svg_plot(const char *title, const kp_svg_labels *labels, const kp_plot_point *pts, int n)
{
    kp_str s = {0};
    double pw = KP_W - KP_L - KP_R, ph = KP_H - KP_T - KP_B;
    double ymax = 0;
    int occ = 0;
    for (int i = 0; i < n; i++) {
        if (pts[i].median_ms > ymax) ymax = pts[i].median_ms;
        if (pts[i].occupancy >= 0) occ = 1;
    }
    double step;
    ymax = kp_nice_max(ymax * 1.05, &step);
    kp_str_printf(&s,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                  KP_W, KP_H, KP_W, KP_H);
    kp_str_printf(&s, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", KP_L);
    kp_str_append_markup(&s, title);
    kp_str_append(&s, "</text>\n");
    /* Grid lines and the left axis. */
    for (int t = 0; t <= 5; t++) {
        double y = KP_T + ph - ph * t / 5.0;
        kp_str_printf(&s,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                      KP_L, y, KP_L + pw, y, KP_L - 6, y + 4, step * t);
        if (occ)
            kp_str_printf(&s, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#d9480f\">%d%%</text>\n",
                          KP_L + pw + 6, y + 4, t * 20);
    }
    kp_str_printf(&s,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                  "stroke=\"#444444\"/>\n"
                  "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\" "
                  "fill=\"#1c5fa8\">",
                  KP_L, KP_T, pw, ph, KP_T + ph / 2);
    kp_str_append_markup(&s, labels->y);
    kp_str_append(&s, "</text>\n");
    if (occ)
        kp_str_printf(&s,
                      "<text transform=\"translate(%.1f,%.1f) rotate(90)\" text-anchor=\"middle\" "
                      "fill=\"#d9480f\">theoretical occupancy</text>\n",
                      KP_W - 16, KP_T + ph / 2);
    kp_str_printf(&s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", KP_L + pw / 2,
                  KP_H - 18);
    kp_str_append_markup(&s, labels->x);
    kp_str_append(&s, "</text>\n");
    double dx = n > 1 ? pw / (n - 1) : 0;
    double x0 = n > 1 ? KP_L : KP_L + pw / 2;
#define KP_X(i) (x0 + dx * (i))
#define KP_Y(v) (KP_T + ph - ph * ((v) / ymax))
    for (int i = 0; i < n; i++) {
        kp_str_printf(&s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", KP_X(i),
                      KP_T + ph + 18);
        kp_str_append_markup(&s, pts[i].label);
        kp_str_append(&s, "</text>\n");
    }
    /* Min (thin), median (thick), occupancy (dashed). */
    kp_str_append(&s, "<polyline fill=\"none\" stroke=\"#8fb8e3\" stroke-width=\"1.5\" points=\"");
    for (int i = 0; i < n; i++)
        kp_str_printf(&s, "%.1f,%.1f ", KP_X(i), KP_Y(pts[i].min_ms));
    kp_str_append(&s,
                  "\"/>\n<polyline fill=\"none\" stroke=\"#1c5fa8\" stroke-width=\"3\" points=\"");
    for (int i = 0; i < n; i++)
        kp_str_printf(&s, "%.1f,%.1f ", KP_X(i), KP_Y(pts[i].median_ms));
    kp_str_append(&s, "\"/>\n");
    if (occ) {
        kp_str_append(&s, "<polyline fill=\"none\" stroke=\"#d9480f\" stroke-width=\"2\" "
                          "stroke-dasharray=\"6,4\" points=\"");
        for (int i = 0; i < n; i++)
            if (pts[i].occupancy >= 0)
                kp_str_printf(&s, "%.1f,%.1f ", KP_X(i), KP_T + ph - ph * pts[i].occupancy);
        kp_str_append(&s, "\"/>\n");
    }
    for (int i = 0; i < n; i++) {
        const kp_plot_point *p = &pts[i];
        kp_str_printf(&s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", KP_X(i),
                      KP_Y(p->median_ms), p->best ? "7" : "4.5",
                      p->best  ? "#2b8a3e"
                      : p->tie ? "#74b816"
                               : "#1c5fa8");
        if (p->best || p->tie)
            kp_str_printf(&s,
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#2b8a3e\">"
                          "%s</text>\n",
                          KP_X(i), KP_Y(p->median_ms) - 12, p->best ? "best" : "tie");
        if (occ && p->occupancy >= 0)
            kp_str_printf(
                &s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"#d9480f\"/>\n",
                KP_X(i) - 3.5, KP_T + ph - ph * p->occupancy - 3.5);
    }
#undef KP_X
#undef KP_Y
    /* Legend. */
    double lx = KP_L + 8, ly = KP_T - 12;
    kp_str_printf(&s,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1c5fa8\" "
                  "stroke-width=\"3\"/><text x=\"%.1f\" y=\"%.1f\">",
                  lx, ly, lx + 24, ly, lx + 30, ly + 4);
    kp_str_append_markup(&s, labels->line);
    kp_str_printf(&s,
                  "</text>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                  "stroke=\"#8fb8e3\" stroke-width=\"1.5\"/><text x=\"%.1f\" y=\"%.1f\">",
                  lx + 90, ly, lx + 114, ly, lx + 120, ly + 4);
    kp_str_append_markup(&s, labels->thin);
    kp_str_append(&s, "</text>\n");
    if (occ)
        kp_str_printf(&s,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d9480f\" "
                      "stroke-width=\"2\" stroke-dasharray=\"6,4\"/><text x=\"%.1f\" "
                      "y=\"%.1f\">occupancy</text>\n",
                      lx + 160, ly, lx + 184, ly, lx + 190, ly + 4);
    kp_str_append(&s, "</svg>\n");
    return kp_str_take(&s);
}
