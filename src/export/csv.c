/*
 * csv.c — CSV fields (see csv.h).
 */
#include "export/csv.h"

#include <string.h>

void kp_csv_field(kp_str *out, const char *text)
{
    kp_str clean = {0};
    kp_str_append_utf8(&clean, text ? text : "", text ? strlen(text) : 0);
    const char *t = clean.data ? clean.data : "";
    if (!strpbrk(t, ",\"\n\r")) {
        kp_str_append(out, t);
    } else {
        kp_str_append(out, "\"");
        for (const char *p = t, *q; *p; p = q + 1) {
            q = strchr(p, '"');
            if (!q) {
                kp_str_append(out, p);
                break;
            }
            kp_str_append_n(out, p, (size_t)(q - p) + 1);
            kp_str_append(out, "\"");
        }
        kp_str_append(out, "\"");
    }
    if (clean.failed) out->failed = 1;
    kp_str_free(&clean);
}
