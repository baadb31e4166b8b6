/*
 * csv.h — one CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, with
 * quotes doubled. CSV has no escapes, so every byte that is not well-formed UTF-8 becomes U+FFFD:
 * the output stays valid UTF-8 whatever bytes a name held. The report's --csv and the call
 * tree's CSV (export/calltree.h) write their text fields through it.
 */
#ifndef KP_EXPORT_CSV_H
#define KP_EXPORT_CSV_H

#include "base/util.h"

/* Append text (NULL is "") as one field to out. */
void kp_csv_field(kp_str *out, const char *text);

#endif
