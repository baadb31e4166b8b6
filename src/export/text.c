/*
 * text.c — colour decisions for terminal output (see text.h).
 */
#include "export/text.h"

#include <stdlib.h>
#include <unistd.h>

int kp_text_colour(FILE *f)
{
    const char *no = getenv("NO_COLOR");
    if (no && *no) return 0;
    return isatty(fileno(f));
}

const char *kp_text_bold(FILE *f)
{
    return kp_text_colour(f) ? "\033[1m" : "";
}

const char *kp_text_red(FILE *f)
{
    return kp_text_colour(f) ? "\033[31m" : "";
}

const char *kp_text_yellow(FILE *f)
{
    return kp_text_colour(f) ? "\033[33m" : "";
}

const char *kp_text_dim(FILE *f)
{
    return kp_text_colour(f) ? "\033[2m" : "";
}

const char *kp_text_reset(FILE *f)
{
    return kp_text_colour(f) ? "\033[0m" : "";
}
