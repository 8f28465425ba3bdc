/*
 * zlib_bench.c: times zlib's whole-buffer calls (compress2, uncompress,
 * crc32, adler32) at sizes 64 B to 1 MiB, for the interposer's thresholds
 * (docs/perf.md, "Unmodified applications"). Run it twice in one sitting:
 * with the stock zlib, and under the interposer with ISOLA_MIN_BYTES=0
 * (every call offloaded); where the second is no slower is the crossover.
 *
 *   zlib_bench [SECONDS_PER_CASE [SIZE...]]   (sizes: 64 B to 1 MiB by doubling)
 *
 * One line per call and size: "call size input_bytes ns_per_call". The
 * input of uncompress is the compressed form of the size's data (its
 * length is input_bytes, what the threshold compares).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* Monotonic nanoseconds. */
static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Text-like data of `size` bytes: words drawn at random from a small
 * vocabulary (zlib level 6 makes it about 3 times smaller). */
static unsigned char *make_text(size_t size)
{
    static const char *const words[] = {"alpha ", "bravo ", "charlie ", "delta ", "echo ",
                                        "foxtrot ", "golf ", "hotel ", "india ", "juliet ",
                                        "kilo ", "lima ", "mike ", "november ", "oscar ", "papa "};
    unsigned char *p = malloc(size + 16);
    uint32_t x = 12345;
    size_t at = 0;
    if (p == NULL)
        exit(2);
    while (at < size) {
        const char *w;
        x = x * 1103515245u + 12345u;
        w = words[(x >> 16) % 16];
        for (; *w != '\0' && at < size; w++)
            p[at++] = (unsigned char)*w;
        if ((x >> 8) % 7 == 0 && at < size)
            p[at++] = (unsigned char)('0' + (x >> 4) % 10);
    }
    return p;
}

/* What one timed case does: one call on the prepared buffers. */
typedef struct bench_case {
    const unsigned char *in;
    size_t in_len;
    unsigned char *out;
    size_t out_room;
    size_t size; /* the uncompressed size */
} bench_case;

/* compress2 at level 6. */
static int run_compress(const bench_case *c)
{
    uLongf len = c->out_room;
    return compress2(c->out, &len, c->in, c->in_len, 6) == Z_OK ? 0 : -1;
}

/* uncompress of the compressed data. */
static int run_uncompress(const bench_case *c)
{
    uLongf len = c->out_room;
    return uncompress(c->out, &len, c->in, c->in_len) == Z_OK && len == c->size ? 0 : -1;
}

/* crc32 from 0. */
static int run_crc32(const bench_case *c)
{
    return crc32(0, c->in, (uInt)c->in_len) == 0x12345678 ? 1 : 0;
}

/* adler32 from 1. */
static int run_adler32(const bench_case *c)
{
    return adler32(1, c->in, (uInt)c->in_len) == 0x12345678 ? 1 : 0;
}

/* Times `run` on c for about `seconds` (at least 3 calls, after one
 * warm-up call): nanoseconds per call, or -1 if a call failed. */
static double time_case(int (*run)(const bench_case *), const bench_case *c, double seconds)
{
    double start, end;
    long calls = 0;
    if (run(c) < 0)
        return -1;
    start = now_ns();
    do {
        if (run(c) < 0)
            return -1;
        calls++;
        end = now_ns();
    } while (calls < 3 || end - start < seconds * 1e9);
    return (end - start) / (double)calls;
}

/* Times every call at one size: 0, or 2 if it could not. */
static int bench_size(size_t size, double seconds)
{
    unsigned char *data = make_text(size);
    uLongf clen = compressBound(size);
    unsigned char *comp = malloc(clen), *out = malloc(size + 64);
    bench_case c;
    if (comp == NULL || out == NULL || compress2(comp, &clen, data, size, 6) != Z_OK)
        return 2;
    c = (bench_case){data, size, comp, compressBound(size), size};
    printf("compress %zu %zu %.0f\n", size, size, time_case(run_compress, &c, seconds));
    c = (bench_case){comp, clen, out, size + 64, size};
    printf("uncompress %zu %lu %.0f\n", size, (unsigned long)clen,
           time_case(run_uncompress, &c, seconds));
    c = (bench_case){data, size, NULL, 0, size};
    printf("crc32 %zu %zu %.0f\n", size, size, time_case(run_crc32, &c, seconds));
    printf("adler32 %zu %zu %.0f\n", size, size, time_case(run_adler32, &c, seconds));
    fflush(stdout);
    free(data);
    free(comp);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.3;
    if (argc > 2) {
        for (int i = 2; i < argc; i++)
            if (bench_size((size_t)strtoul(argv[i], NULL, 10), seconds) != 0)
                return 2;
        return 0;
    }
    for (size_t size = 64; size <= ((size_t)1 << 20); size *= 2)
        if (bench_size(size, seconds) != 0)
            return 2;
    return 0;
}
