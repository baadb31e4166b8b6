/*
 * man.c — kprof_man, the build-time generator of kprof's man pages from its one help text
 * (help.h): `kprof_man OUTDIR VERSION` writes OUTDIR/kprof.1 (the `kprof --help` page: the
 * commands, exit codes, environment) and OUTDIR/kprof-CMD.1 for every command. A command's help
 * is read as blocks separated by blank lines: the first ("usage: ...") is the SYNOPSIS; a block
 * of indented lines with one that starts "  -" is OPTIONS, printed as it is less its two
 * spaces of indent (no fill, so its columns stay); the blocks before the first such block are the
 * DESCRIPTION, those after it EXIT STATUS ("Exit code"/"The exit code"), ENVIRONMENT
 * ("Environment:") or NOTES. Unindented lines are filled text, indented ones kept as they are.
 * A no-fill line (synopsis, options, indented text) too long for man's 80 columns is cut at
 * spaces and carried on below, under its description's column (man_nofill_line). Not
 * installed: CMake runs it.
 */
#include "tools/kprof/help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write n bytes of s as roff text: a backslash as \e, '-' as \- (an ASCII minus a reader can
 * copy), quotes and backquotes as \(aq and \(ga, other bytes above ASCII as \[uXXXX]; a '.' or
 * '\'' starting the line behind \& so that it is not a request. */
static void man_text(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 0 && (c == '.' || c == '\'')) fputs("\\&", f);
        if (c == '\\') {
            fputs("\\e", f);
        } else if (c == '-') {
            fputs("\\-", f);
        } else if (c == '\'') {
            fputs("\\(aq", f);
        } else if (c == '`') {
            fputs("\\(ga", f);
        } else if (c < 0x80) {
            fputc(c, f);
        } else {
            /* UTF-8: the help text is well-formed (a lead byte, then its continuations). */
            int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
            unsigned long cp = c & (0x3f >> more);
            for (int k = 0; k < more && i + 1 < n; k++)
                cp = (cp << 6) | ((unsigned char)s[++i] & 0x3f);
            fprintf(f, "\\[u%04lX]", cp);
        }
    }
}

/* One line of text (no newline) and its newline. */
static void man_line(FILE *f, const char *s, size_t n)
{
    man_text(f, s, n);
    fputc('\n', f);
}

/* What a no-fill line may take: man's 80 columns less the page's 7 of indent. */
#define MAN_NOFILL_WIDTH 73

/* Columns of n bytes of UTF-8 (one a character: the help has no wide ones). */
static size_t man_columns(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* Where the further lines of a no-fill line of n bytes start when man_nofill_line cuts it:
 * after its first run of two spaces or more (an option's description), else at the line's own
 * indent (a continuation line of the help). */
static size_t man_hang(const char *s, size_t n)
{
    size_t lead = 0;
    while (lead < n && s[lead] == ' ')
        lead++;
    for (size_t i = lead; i + 1 < n; i++)
        if (s[i] == ' ' && s[i + 1] == ' ') {
            size_t k = i;
            while (k < n && s[k] == ' ')
                k++;
            return k < n ? k : lead;
        }
    return lead;
}

/* One no-fill line of n bytes, cut at spaces into lines of at most MAN_NOFILL_WIDTH columns,
 * each further line indented by `indent` columns (at most half the width: past it, the line's
 * own indent and 4); no cut before that column of the first line. A word longer than the room
 * stays whole. */
static void man_nofill_line(FILE *f, const char *s, size_t n, size_t indent)
{
    size_t lead = 0;
    while (lead < n && s[lead] == ' ')
        lead++;
    if (indent > MAN_NOFILL_WIDTH / 2) indent = lead + 4; /* room for the text */
    size_t at = 0, pad = 0;
    while (at < n) {
        size_t room = MAN_NOFILL_WIDTH - pad, len = n - at;
        if (man_columns(s + at, len) > room) {
            size_t cut = 0, cols = 0;
            for (size_t i = at; i < n && cols <= room; i++) {
                if (s[i] == ' ' && i > at + indent - pad && i > at) cut = i - at;
                cols += ((unsigned char)s[i] & 0xc0) != 0x80;
            }
            if (cut) len = cut;
        }
        size_t e = at + len;
        while (e > at && s[e - 1] == ' ')
            e--;
        for (size_t k = 0; k < pad; k++)
            fputc(' ', f);
        man_line(f, s + at, e - at);
        at += len;
        while (at < n && s[at] == ' ')
            at++;
        pad = indent;
    }
}

/* The lines of [s, end): unindented runs filled, indented runs inside .nf/.fi. */
static void man_block(FILE *f, const char *s, const char *end)
{
    int nofill = 0;
    fputs(".PP\n", f);
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        int indented = *s == ' ';
        if (indented && !nofill) fputs(".nf\n", f);
        if (!indented && nofill) fputs(".fi\n", f);
        nofill = indented;
        if (indented)
            man_nofill_line(f, s, (size_t)(e - s), man_hang(s, (size_t)(e - s)));
        else
            man_line(f, s, (size_t)(e - s));
        s = nl ? nl + 1 : end;
    }
    if (nofill) fputs(".fi\n", f);
}

/* Whether [s, end) is an options block: every line indented, one starting "  -". */
static int man_is_options(const char *s, const char *end)
{
    int option = 0;
    for (const char *l = s; l < end;) {
        if (*l != ' ') return 0;
        if (end - l > 3 && l[1] == ' ' && l[2] == '-') option = 1;
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        l = nl ? nl + 1 : end;
    }
    return option;
}

static int man_starts(const char *s, const char *end, const char *prefix)
{
    size_t n = strlen(prefix);
    return (size_t)(end - s) >= n && memcmp(s, prefix, n) == 0;
}

/* .TH for the page called name (upper-cased), section 1. */
static void man_header(FILE *f, const char *name, const char *version)
{
    fputs(".\\\" Generated by tools/kprof/man.c from kprof's help text (tools/kprof/help.c).\n", f);
    fputs(".TH \"", f);
    for (const char *p = name; *p; p++)
        fputc(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p, f);
    fprintf(f, "\" 1 \"\" \"kprof %s\" \"kprof manual\"\n.nh\n", version);
}

/* "usage: kprof X ...\n       kprof X ...\n": each line, without "usage: " or the 7 spaces
 * that align it, in no-fill; one too long for the page goes on under its first argument. */
static void man_synopsis(FILE *f, const char *s, const char *end)
{
    fputs(".SH SYNOPSIS\n.nf\n", f);
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        if (man_starts(s, e, "usage: "))
            s += 7;
        else if (man_starts(s, e, "       "))
            s += 7;
        size_t n = (size_t)(e - s), hang = man_hang(s, n);
        if (man_starts(s, e, "kprof ")) { /* under what follows "kprof CMD " */
            const char *arg = memchr(s + 6, ' ', n - 6);
            if (arg) hang = (size_t)(arg + 1 - s);
        }
        man_nofill_line(f, s, n, hang);
        s = nl ? nl + 1 : end;
    }
    fputs(".fi\n", f);
}

/* Entries "  KEY  TEXT" continued on deeper lines (kp_help_exit_codes, kp_help_environment,
 * after their first line) as .TP paragraphs; an entry whose KEY ends with ',' and no TEXT
 * continues on the next line's KEY. */
static void man_entries(FILE *f, const char *s)
{
    s = strchr(s, '\n') + 1; /* the "exit codes:" line */
    int open_key = 0;
    while (*s) {
        const char *e = strchr(s, '\n');
        const char *text = s;
        while (*text == ' ')
            text++;
        if (text - s == 2) { /* a new key, or the rest of one */
            const char *gap = strstr(text, "  ");
            const char *key_end = gap && gap < e ? gap : e;
            if (!open_key) fputs(".TP\n", f);
            man_text(f, text, (size_t)(key_end - text));
            open_key = key_end == e;
            if (open_key) {
                fputc(' ', f);
            } else {
                fputc('\n', f);
                while (*key_end == ' ')
                    key_end++;
                man_line(f, key_end, (size_t)(e - key_end));
            }
        } else {
            man_line(f, text, (size_t)(e - text));
        }
        s = e + 1;
    }
}

/* kprof_man is a build-time tool that links the help text alone, no kprof layer, so kp_error is
 * not at hand: its page writers keep 0/-1, and each failure is said once, where the file is
 * opened or closed ("kprof_man: cannot write PATH"); main turns it into exit 1. */
static FILE *man_open(const char *dir, const char *page)
{
    FILE *f = NULL;
    size_t n = strlen(dir) + strlen(page) + 2;
    char *path = malloc(n);
    if (path) {
        snprintf(path, n, "%s/%s", dir, page);
        f = fopen(path, "w");
    }
    if (!f) fprintf(stderr, "kprof_man: cannot write %s/%s\n", dir, page);
    free(path);
    return f;
}

static int man_close(FILE *f, const char *dir, const char *page)
{
    int bad = ferror(f);
    if (fclose(f) == 0 && !bad) return 0;
    fprintf(stderr, "kprof_man: cannot write %s/%s\n", dir, page);
    return -1;
}

static int man_command(const char *dir, const kp_help *h, const char *version)
{
    char page[80], name[64];
    snprintf(name, sizeof name, "kprof-%s", h->name);
    snprintf(page, sizeof page, "%s.1", name);
    FILE *f = man_open(dir, page);
    if (!f) return -1;
    man_header(f, name, version);
    fputs(".SH NAME\n", f);
    fprintf(f, "%s \\- ", name);
    man_line(f, h->summary, strlen(h->summary));
    const char *s = h->usage, *end = s + strlen(s);
    while (end > s && end[-1] == '\n')
        end--;
    int section = 0; /* 0: synopsis next, 1 description, 2 options, 3 after the options */
    while (s < end) {
        const char *gap = strstr(s, "\n\n");
        const char *e = gap && gap < end ? gap : end;
        if (section == 0) {
            man_synopsis(f, s, e);
            fputs(".SH DESCRIPTION\n", f);
            section = 1;
        } else if (man_is_options(s, e)) {
            if (section == 1) fputs(".SH OPTIONS\n", f);
            if (section == 1) section = 2;
            fputs(".PP\n.nf\n", f);
            for (const char *l = s; l < e;) {
                const char *nl = memchr(l, '\n', (size_t)(e - l));
                const char *le = nl ? nl : e;
                const char *t = l + 2; /* the block's indent: the page indents it already */
                man_nofill_line(f, t, (size_t)(le - t), man_hang(t, (size_t)(le - t)));
                l = nl ? nl + 1 : e;
            }
            fputs(".fi\n", f);
        } else {
            if (section >= 2) {
                if (man_starts(s, e, "Exit code") || man_starts(s, e, "The exit code"))
                    fputs(".SH \"EXIT STATUS\"\n", f);
                else if (man_starts(s, e, "Environment:"))
                    fputs(".SH ENVIRONMENT\n", f);
                else if (section == 2)
                    fputs(".SH NOTES\n", f);
                section = 3;
            }
            man_block(f, s, e);
        }
        s = e < end ? e + 2 : end;
    }
    if (section == 1) { /* no text but the synopsis: the summary says what it does */
        fputs(".PP\n", f);
        man_line(f, h->summary, strlen(h->summary));
    }
    fputs(".SH \"SEE ALSO\"\n.BR kprof (1)\n", f);
    return man_close(f, dir, page);
}

static int man_kprof(const char *dir, const char *version)
{
    FILE *f = man_open(dir, "kprof.1");
    if (!f) return -1;
    man_header(f, "kprof", version);
    fputs(".SH NAME\nkprof \\- ", f);
    for (const char *t = kp_help_tagline; *t;) { /* its lines joined by spaces */
        const char *nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) : strlen(t);
        man_text(f, t, n);
        t += n;
        if (*t) fputc(' ', f), t++;
    }
    fputs("\n.SH SYNOPSIS\n", f);
    const char *syn = kp_help_synopsis + strlen("usage: ");
    man_line(f, syn, strlen(syn) - 1);
    fputs(".SH DESCRIPTION\n.PP\n", f);
    man_line(f, kp_help_more, strlen(kp_help_more) - 1);
    fputs(".SS Commands\n", f);
    for (const kp_help *h = kp_helps; h->name; h++) {
        fprintf(f, ".TP\n.BR kprof\\-%s (1)\n", h->name);
        man_line(f, h->summary, strlen(h->summary));
    }
    fputs(".SH \"EXIT STATUS\"\n", f);
    man_entries(f, kp_help_exit_codes);
    fputs(".SH ENVIRONMENT\n", f);
    man_entries(f, kp_help_environment);
    fputs(".SH \"SEE ALSO\"\n", f);
    for (const kp_help *h = kp_helps; h->name; h++)
        fprintf(f, ".BR kprof\\-%s (1)%s\n", h->name, h[1].name ? "," : "");
    return man_close(f, dir, "kprof.1");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: kprof_man OUTDIR VERSION\n");
        return 2;
    }
    int rc = man_kprof(argv[1], argv[2]);
    for (const kp_help *h = kp_helps; h->name && rc == 0; h++)
        rc = man_command(argv[1], h, argv[2]);
    return rc == 0 ? 0 : 1;
}
