/* main.c: the canary's C entry. It copies the command line out of the
 * read-only window, splits it into words, drops the words launchers add
 * (--name=..., --solo5:...), and runs the mode named by the first word
 * (default hello). */
#include "canary.h"

#define MAX_WORDS 64

static const struct mode modes[] = {
    {"hello", mode_hello}, {"exit", mode_exit}, {"wait", mode_wait},         {"sleep", mode_sleep},
    {"flood", mode_flood}, {"blk", mode_blk},   {"net-send", mode_net_send}, {"net-echo", mode_net_echo},
    {"count", mode_count},
};

_Noreturn void canary_main(const void *boot_arg);

void canary_main(const void *boot_arg)
{
    static char line[8192];
    static char *argv[MAX_WORDS + 1];
    static char hello[] = "hello";
    int argc = 0;

    plat_init(boot_arg);
    /* The tender's window is read-only: copy before cutting words. */
    const char *src = plat_cmdline();
    size_t n = str_len(src);
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, src, n);
    line[n] = '\0';

    for (char *p = line; *p && argc < MAX_WORDS;) {
        while (*p == ' ')
            *p++ = '\0';
        if (!*p)
            break;
        char *w = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
        if (str_starts(w, "--name=") || str_starts(w, "--solo5:"))
            continue;
        argv[argc++] = w;
    }
    if (argc == 0)
        argv[argc++] = hello;
    argv[argc] = 0;

    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (str_eq(argv[0], modes[i].name))
            modes[i].run(argc, argv);
    for (size_t i = 0; i < plat_n_modes; i++)
        if (str_eq(argv[0], plat_modes[i].name))
            plat_modes[i].run(argc, argv);
    put_s("petrel-canary unknown mode ");
    put_s(argv[0]);
    put_s("\n");
    halt(2);
}
