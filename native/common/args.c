/* args.c: the two passes over the options and the version text, shared by
 * both tenders; messages are solo5's with the program name substituted, so
 * operators and the daemon read one language. */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "util.h"

#ifndef PETREL_VERSION
#define PETREL_VERSION "unknown"
#endif

int args_pass1(const struct cli *cli, int argc, char *argv[])
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--help") == 0) {
            cli->usage();
            exit(1);
        }
        if (strcmp(argv[i], "--version") == 0) {
            /* The daemon selects a tender by the exact line "ABI version N". */
            fprintf(stderr, "%s tender, version %s\nABI version %u\n", prog, PETREL_VERSION,
                    cli->abi_version);
            exit(0);
        }
        if (strcmp(argv[i++], "--") == 0)
            break;
    }
    if (i >= argc) {
        warn_msg("Missing KERNEL operand");
        cli->usage();
        exit(1);
    }
    return i;
}

static _Noreturn void invalid_option(const struct cli *cli, const char *word)
{
    warn_msg("Invalid option: `%s'", word);
    cli->usage();
    exit(1);
}

int64_t args_pass2(const struct cli *cli, int argc, char *argv[], int kernel, const struct manifest *m)
{
    int64_t mem = 512;
    (void)argc;
    for (int i = 1; i < kernel; i++) {
        const char *w = argv[i];
        if (strcmp(w, "--") == 0)
            continue;
        if (strncmp(w, "--mem=", 6) == 0) {
            if (!parse_i64(w + 6, &mem) || mem == 0)
                die("Malformed argument to --mem");
            continue;
        }
        if (cli->core_option != NULL && cli->core_option(w))
            continue;
        /* solo5 offers the word after a --mem= to the modules in the same step
         * and so reports some errors twice; we report each once (the texts are
         * the same, and nobody should count stderr lines). */
        if (block_option(w, m) || net_option(w, m))
            continue;
        invalid_option(cli, w);
    }
    return mem;
}

void args_guest_cmdline(char *dst, int argc, char *const argv[])
{
    size_t len = 0;
    for (int i = 0; i < argc; i++) {
        size_t sep = i > 0, n = strlen(argv[i]);
        if (sep + n > GUEST_CMDLINE_SIZE - 1 - len)
            die("Guest command line too long (max=%d characters)", GUEST_CMDLINE_SIZE - 1);
        if (sep)
            dst[len++] = ' ';
        memcpy(dst + len, argv[i], n);
        len += n;
    }
    dst[len] = '\0';
}
