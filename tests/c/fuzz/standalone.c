/*
 * standalone.c -- a main() for the fuzz targets without libFuzzer, so CI
 * can fuzz with gcc + ASan/UBSan and no clang.
 *
 *   fuzz_lookup [-runs N] [-seed S] [-max_len L] [-name NAME] DIR_OR_FILE...
 *
 * 1. Every file of every corpus directory (sorted by name) runs once.
 * 2. N more inputs run, deterministic for a given seed: each is a corpus
 *    entry (or, one time in eight, random bytes) put through 1-8 mutations
 *    (bit flips, byte / int overwrites with edge values, inserts, erases,
 *    chunk copies, splices with another entry, truncation).
 * Then it prints "NAME: E execs (C corpus + M mutated), 0 crashes" and exits 0.
 *
 * Every input is copied into a heap block of exactly its size, so reading
 * one byte past it is an ASan report. A crash (sanitizer report, abort from
 * FUZZ_CHECK, SIGSEGV) writes the input to ./crash-NAME-<exec> first; rerun
 * the binary on that file to reproduce. The same target files build
 * unchanged with clang -fsanitize=fuzzer (see tests/c/fuzz/README.md).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_input.h"

#define MAX_ENTRIES 4096

static const char *g_name = "fuzz";
static const uint8_t *g_current;
static size_t g_current_size;
static unsigned long long g_exec;

/* ---- crash reproducer ---------------------------------------------------- */

static void write_reproducer(void)
{
    static volatile sig_atomic_t done;
    char path[256];
    int fd;
    if (done || g_current == NULL)
        return;
    done = 1;
    snprintf(path, sizeof path, "crash-%s-%llu", g_name, g_exec);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        size_t off = 0;
        while (off < g_current_size) {
            ssize_t w = write(fd, g_current + off, g_current_size - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
        fprintf(stderr, "%s: input of exec %llu (%zu bytes) written to %s\n",
                g_name, g_exec, g_current_size, path);
    }
}

static void on_signal(int sig)
{
    write_reproducer();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Called by ASan/UBSan before they exit on a report; absent without them. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* ---- deterministic PRNG (splitmix64) -------------------------------------- */

static uint64_t g_rng;

static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t rnd_below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rnd() % n);
}

/* ---- corpus -------------------------------------------------------------- */

typedef struct entry {
    uint8_t *data;
    size_t size;
    char *path;
} entry;

static entry g_corpus[MAX_ENTRIES];
static size_t g_count;

static int read_file(const char *path, size_t max_len)
{
    FILE *f;
    uint8_t *buf;
    size_t n;
    if (g_count >= MAX_ENTRIES)
        return 0;
    f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot open %s\n", g_name, path);
        return -1;
    }
    buf = malloc(max_len > 0 ? max_len : 1);
    if (buf == NULL)
        abort();
    n = fread(buf, 1, max_len, f);
    fclose(f);
    g_corpus[g_count].data = buf;
    g_corpus[g_count].size = n;
    g_corpus[g_count].path = strdup(path);
    g_count++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load(const char *path, size_t max_len)
{
    struct stat st;
    DIR *dir;
    struct dirent *de;
    char *names[MAX_ENTRIES];
    size_t n = 0, i;
    int rc = 0;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: no such corpus %s\n", g_name, path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return read_file(path, max_len);
    dir = opendir(path);
    if (dir == NULL)
        return -1;
    while ((de = readdir(dir)) != NULL && n < MAX_ENTRIES) {
        if (de->d_name[0] == '.')
            continue;
        names[n++] = strdup(de->d_name);
    }
    closedir(dir);
    qsort(names, n, sizeof names[0], cmp_str);
    for (i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && rc == 0)
            rc = read_file(full, max_len);
        free(names[i]);
    }
    return rc;
}

/* ---- one execution ------------------------------------------------------- */

static void run_one(const uint8_t *data, size_t size)
{
    /* exact-size copy: an over-read of the input is an ASan report */
    uint8_t *copy = malloc(size > 0 ? size : 1);
    if (copy == NULL)
        abort();
    if (size > 0)
        memcpy(copy, data, size);
    g_current = copy;
    g_current_size = size;
    LLVMFuzzerTestOneInput(copy, size);
    g_current = NULL;
    free(copy);
    g_exec++;
}

/* ---- mutations ----------------------------------------------------------- */

static const uint64_t edge_u64[] = {
    0, 1, 0xff, 0x7f, 0x80, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
    0x100000000ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
    0xffffffffffffffffULL, 0x4000000000000000ULL, 3037000500ULL, 2097152,
};

static size_t mutate(uint8_t *buf, size_t size, size_t max_len)
{
    size_t rounds = 1 + rnd_below(8);
    for (size_t r = 0; r < rounds; r++) {
        switch (rnd_below(10)) {
        case 0: /* flip a bit */
            if (size > 0)
                buf[rnd_below(size)] ^= (uint8_t)(1u << rnd_below(8));
            break;
        case 1: /* random byte */
            if (size > 0)
                buf[rnd_below(size)] = (uint8_t)rnd();
            break;
        case 2: { /* interesting byte */
            static const uint8_t bytes[] = {0, 1, 0x7f, 0x80, 0xff, ' ', '-',
                                            '=', ',', '.', 'e', '0', '9'};
            if (size > 0)
                buf[rnd_below(size)] = bytes[rnd_below(sizeof bytes)];
            break;
        }
        case 3: { /* overwrite 1/2/4/8 bytes with an edge integer */
            size_t w = (size_t)1 << rnd_below(4);
            uint64_t v = edge_u64[rnd_below(FI_COUNT(edge_u64))];
            if (rnd() & 1)
                v = (uint64_t)0 - v;
            if (size >= w) {
                size_t at = rnd_below(size - w + 1);
                for (size_t i = 0; i < w; i++)
                    buf[at + i] = (uint8_t)(v >> (8 * i));
            }
            break;
        }
        case 4: { /* insert random bytes */
            size_t n = 1 + rnd_below(16), at = rnd_below(size + 1);
            if (size + n > max_len)
                break;
            memmove(buf + at + n, buf + at, size - at);
            for (size_t i = 0; i < n; i++)
                buf[at + i] = (uint8_t)rnd();
            size += n;
            break;
        }
        case 5: { /* erase a run */
            size_t at, n;
            if (size == 0)
                break;
            at = rnd_below(size);
            n = 1 + rnd_below(size - at);
            memmove(buf + at, buf + at + n, size - at - n);
            size -= n;
            break;
        }
        case 6: { /* copy a chunk within the input */
            size_t from, to, n;
            if (size < 2)
                break;
            from = rnd_below(size);
            to = rnd_below(size);
            n = 1 + rnd_below(size - (from > to ? from : to));
            memmove(buf + to, buf + from, n);
            break;
        }
        case 7: { /* splice: the tail of another corpus entry */
            const entry *e;
            size_t at, from, n;
            if (g_count == 0)
                break;
            e = &g_corpus[rnd_below(g_count)];
            at = rnd_below(size + 1);
            from = rnd_below(e->size + 1);
            n = e->size - from;
            if (at + n > max_len)
                n = max_len - at;
            memcpy(buf + at, e->data + from, n);
            size = at + n;
            break;
        }
        case 8: /* truncate */
            size = rnd_below(size + 1);
            break;
        default: { /* repeat a byte (long names, long lists) */
            size_t n = rnd_below(64), at = rnd_below(size + 1);
            uint8_t b = size > 0 ? buf[rnd_below(size)] : (uint8_t)rnd();
            if (size + n > max_len)
                n = max_len - size;
            memmove(buf + at + n, buf + at, size - at);
            memset(buf + at, b, n);
            size += n;
            break;
        }
        }
    }
    return size;
}

int main(int argc, char **argv)
{
    unsigned long long runs = 10000, seed = 1;
    size_t max_len = 4096;
    unsigned long long corpus_execs, i;
    uint8_t *buf;
    int a;

    g_name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-runs") == 0 && a + 1 < argc)
            runs = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "-seed") == 0 && a + 1 < argc)
            seed = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "-max_len") == 0 && a + 1 < argc)
            max_len = (size_t)strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "-name") == 0 && a + 1 < argc)
            g_name = argv[++a];
        else if (argv[a][0] == '-') {
            fprintf(stderr,
                    "usage: %s [-runs N] [-seed S] [-max_len L] [-name NAME] "
                    "CORPUS_DIR_OR_FILE...\n", argv[0]);
            return 2;
        } else if (load(argv[a], max_len) != 0) {
            return 2;
        }
    }
    if (max_len < 16)
        max_len = 16;

    signal(SIGABRT, on_signal);
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
    if (__sanitizer_set_death_callback != NULL)
        __sanitizer_set_death_callback(write_reproducer);

    for (i = 0; i < g_count; i++)
        run_one(g_corpus[i].data, g_corpus[i].size);
    run_one(NULL, 0); /* the empty input */
    corpus_execs = g_exec;

    g_rng = seed;
    buf = malloc(max_len);
    if (buf == NULL)
        abort();
    for (i = 0; i < runs; i++) {
        size_t size;
        if (g_count == 0 || rnd_below(8) == 0) {
            size = rnd_below(rnd_below(2) ? 64 : max_len + 1);
            for (size_t k = 0; k < size; k++)
                buf[k] = (uint8_t)rnd();
        } else {
            const entry *e = &g_corpus[rnd_below(g_count)];
            size = e->size;
            memcpy(buf, e->data, size);
        }
        size = mutate(buf, size, max_len);
        run_one(buf, size);
    }
    free(buf);
    for (i = 0; i < g_count; i++) {
        free(g_corpus[i].data);
        free(g_corpus[i].path);
    }
    printf("%s: %llu execs (%llu corpus + %llu mutated, seed %llu), 0 crashes\n",
           g_name, g_exec, corpus_execs, g_exec - corpus_execs, seed);
    return 0;
}
