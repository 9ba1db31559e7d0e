/* globals.c: the image's data and bss as the tender leaves them
 * (solo5-spt.md §1.3, §2.3): initialised data from the file, .bss zero though
 * no tender loads its segment (it has no file data; fresh memory is zero), a
 * constant in the read-only text segment, and all of them usable. */
#include "conform.h"

static uint64_t answer = 42;
static const char *greeting = "hello from .data";
static struct {
    uint32_t a;
    uint16_t b[3];
    uint8_t c;
} record = {0xdeadbeef, {1, 2, 3}, 0x7f};
static uint8_t zeros[256 * 1024]; /* spans many pages of the bss-only segment */
static uint64_t counter;
static const uint32_t table[4] = {2, 3, 5, 7};

void conform_globals(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check("data initialised", answer == 42 && str_eq(greeting, "hello from .data") && record.a == 0xdeadbeef &&
                                  record.b[0] == 1 && record.b[2] == 3 && record.c == 0x7f,
          "wrong initial values");
    int all_zero = counter == 0;
    for (size_t i = 0; i < sizeof zeros; i++)
        all_zero &= zeros[i] == 0;
    check("bss zero", all_zero, "a non-zero byte in .bss");
    check("rodata", table[0] + table[1] + table[2] + table[3] == 17, "wrong constant");

    answer++;
    counter += 3;
    for (size_t i = 0; i < sizeof zeros; i += 4096)
        zeros[i] = (uint8_t)(i >> 12);
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof zeros; i += 4096)
        sum += zeros[i];
    check("data and bss writable", answer == 43 && counter == 3 && sum == 63 * 64 / 2, "a write did not stick");
    halt(0);
}
