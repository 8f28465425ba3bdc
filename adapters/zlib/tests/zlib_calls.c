/*
 * zlib_calls.c: a small program that only calls zlib, for the interposer's
 * test (crates/isola-capi/tests/zlib_interposer.rs).
 *
 * It compresses and decompresses buffers with compress2/uncompress/
 * uncompress2 and deflate/inflate streams driven the ways programs drive
 * them (one call with deflateBound's room, zpipe's loops on avail_out, a
 * loop on avail_in, small output buffers), and damages streams (cut,
 * corrupted, followed by junk, too small a destination). It prints only
 * what zlib promises the same whatever compressed the data: return codes,
 * decompressed lengths and contents (as checksums), counters, check values.
 * The test runs it with and without the interposer: the two outputs must
 * be identical. Exit status 1 if a round trip is wrong.
 *
 *   zlib_calls            all checks
 *   zlib_calls fail       under ISOLA_FALLBACK=error with isolad absent:
 *                         prints the codes compress2, uncompress, deflate
 *                         and inflate return
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Whether any check failed. */
static int failed;

/* Reports a failed check. */
static void fail(const char *what, size_t size)
{
    printf("FAIL %s (size %zu)\n", what, size);
    failed = 1;
}

/* Deterministic data of `size` bytes: text-like (kind 0) or random-looking (1). */
static unsigned char *make_data(size_t size, int kind)
{
    unsigned char *p = malloc(size + 1);
    uint32_t x = 2463534242u + (uint32_t)size;
    if (p == NULL)
        exit(2);
    for (size_t i = 0; i < size; i++) {
        if (kind == 0) {
            p[i] = (unsigned char)("the quick brown fox jumps over the lazy dog "[(i * 7 / 5) % 44]);
        } else {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            p[i] = (unsigned char)(x >> 24);
        }
    }
    return p;
}

/* A growing byte buffer. */
typedef struct buffer {
    unsigned char *data;
    size_t len, cap;
} buffer;

/* Appends n bytes. */
static void append(buffer *b, const unsigned char *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = realloc(b->data, b->cap);
        if (b->data == NULL)
            exit(2);
    }
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* Compresses data with deflate(Z_FINISH) in one call of the whole input,
 * its output taken `chunk` bytes at a time (zpipe's loop on avail_out). */
static int deflate_chunked(const unsigned char *data, size_t size, int wbits, size_t chunk,
                           buffer *out, uLong *adler)
{
    z_stream s;
    unsigned char *piece = malloc(chunk);
    int rc, end_rc, calls = 0;
    memset(&s, 0, sizeof s);
    if (piece == NULL || deflateInit2(&s, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        exit(2);
    s.next_in = (Bytef *)data;
    s.avail_in = (uInt)size;
    do {
        s.next_out = piece;
        s.avail_out = (uInt)chunk;
        rc = deflate(&s, Z_FINISH);
        append(out, piece, chunk - s.avail_out);
        calls++;
    } while (s.avail_out == 0 && rc == Z_OK);
    *adler = s.adler;
    if (s.avail_in != 0 || s.total_in != size || s.total_out != out->len)
        fail("deflate counters", size);
    /* a finished stream stays finished */
    s.next_out = piece;
    s.avail_out = (uInt)chunk;
    if (deflate(&s, Z_FINISH) != Z_STREAM_END)
        fail("deflate after its end", size);
    end_rc = deflateEnd(&s);
    free(piece);
    printf("  deflate wbits %d chunk %zu: rc %d, end %d, in %zu, calls > 1: %d, adler %08lx\n", wbits,
           chunk, rc, end_rc, size, chunk < 8 && calls > 1, (unsigned long)*adler);
    return rc;
}

/* Decompresses a whole stream with inflate(flush), output `chunk` bytes
 * at a time, in zpipe's loop (until avail_out is left nonzero) or in a
 * loop on avail_in (by_input). Prints what zlib reports; checks the
 * output against `want`. */
static void inflate_chunked(const buffer *in, int wbits, int flush, size_t chunk, int by_input,
                            const unsigned char *want, size_t size)
{
    z_stream s;
    unsigned char *piece = malloc(chunk);
    buffer out = {0};
    int rc;
    memset(&s, 0, sizeof s);
    if (piece == NULL || inflateInit2(&s, wbits) != Z_OK)
        exit(2);
    s.next_in = in->data;
    s.avail_in = (uInt)in->len;
    for (;;) {
        s.next_out = piece;
        s.avail_out = (uInt)chunk;
        rc = inflate(&s, flush);
        append(&out, piece, chunk - s.avail_out);
        if (rc != Z_OK && !(rc == Z_BUF_ERROR && flush == Z_FINISH && s.avail_out == 0))
            break;
        if (by_input ? s.avail_in == 0 : s.avail_out != 0)
            break;
    }
    if (rc == Z_STREAM_END &&
        (out.len != size || (size > 0 && memcmp(out.data, want, size) != 0)))
        fail("inflate output", size);
    printf("  inflate wbits %d flush %d chunk %zu by_input %d: rc %d, all in %d, out %lu, left %u, "
           "adler %08lx, crc %08lx",
           wbits, flush, chunk, by_input, rc, s.total_in == in->len, s.total_out, rc == Z_STREAM_END ? s.avail_in : 0,
           (unsigned long)s.adler, (unsigned long)crc32(0, out.data, (uInt)out.len));
    /* a finished stream stays finished */
    if (rc == Z_STREAM_END) {
        s.next_out = piece;
        s.avail_out = (uInt)chunk;
        printf(", again %d", inflate(&s, Z_FINISH));
    }
    printf(", end %d\n", inflateEnd(&s));
    free(piece);
    free(out.data);
}

/* uncompress of `len` bytes of src into room `room`: prints the code,
 * the length and the consumed input, and checks the output if Z_OK. */
static void uncompress_case(const char *what, const unsigned char *src, size_t len, size_t room,
                            const unsigned char *want, size_t size)
{
    unsigned char *dest = malloc(room + 1);
    uLongf dest_len = room;
    uLong src_len = len;
    int rc;
    if (dest == NULL)
        exit(2);
    rc = uncompress2(dest, &dest_len, src, &src_len);
    /* (with no room at all zlib says Z_OK for a 1-byte output it did not write) */
    if (rc == Z_OK && room > 0 && (dest_len != size || (size > 0 && memcmp(dest, want, size) != 0)))
        fail(what, size);
    printf("  uncompress2 %s: rc %d, out %lu, all in %d, crc %08lx\n", what, rc, (unsigned long)dest_len,
           src_len == len, (unsigned long)crc32(0, dest, (uInt)dest_len));
    dest_len = room;
    printf("  uncompress %s: rc %d\n", what, uncompress(dest, &dest_len, src, (uLong)len));
    free(dest);
}

/* The one-shot calls on one buffer. */
static void one_shot(const unsigned char *data, size_t size)
{
    uLongf bound = compressBound((uLong)size), len = bound, tiny = 4;
    unsigned char *c = malloc(bound + 16), small[4];
    int rc;
    if (c == NULL)
        exit(2);
    rc = compress2(c, &len, data, (uLong)size, 6);
    printf("  compress2: rc %d\n", rc);
    printf("  compress2 into 4 bytes: rc %d\n", compress2(small, &tiny, data, (uLong)size, 6));
    printf("  compress2 level 12: rc %d\n", compress2(small, &tiny, data, (uLong)size, 12));
    uncompress_case("whole", c, len, size, data, size);
    uncompress_case("room to spare", c, len, size + 100, data, size);
    if (size > 0)
        uncompress_case("one byte short", c, len, size - 1, data, size);
    memcpy(c + len, "junk after", 10);
    uncompress_case("junk after", c, len + 10, size, data, size);
    uncompress_case("cut", c, len - 3, size, data, size);
    c[1] ^= 1; /* the header's check bits */
    uncompress_case("corrupt", c, len, size, data, size);
    free(c);
}

/* The streams on one buffer, in each format. */
static void streams(const unsigned char *data, size_t size)
{
    static const int formats[] = {15, -15, 31};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        int wbits = formats[f];
        buffer c = {0}, whole = {0};
        uLong adler;
        z_stream s;
        /* deflateBound's room: zlib promises Z_STREAM_END in one call */
        memset(&s, 0, sizeof s);
        if (deflateInit2(&s, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            exit(2);
        whole.cap = deflateBound(&s, (uLong)size);
        whole.data = malloc(whole.cap);
        s.next_in = (Bytef *)data;
        s.avail_in = (uInt)size;
        s.next_out = whole.data;
        s.avail_out = (uInt)whole.cap;
        printf("  deflate wbits %d in deflateBound: rc %d", wbits, deflate(&s, Z_FINISH));
        printf(", end %d\n", deflateEnd(&s));
        free(whole.data);

        deflate_chunked(data, size, wbits, 1000, &c, &adler);
        c.len = 0;
        deflate_chunked(data, size, wbits, 7, &c, &adler);
        inflate_chunked(&c, wbits, Z_FINISH, 16384, 0, data, size);
        inflate_chunked(&c, wbits, Z_NO_FLUSH, 1000, 0, data, size);
        if (wbits != -15) {
            /* a loop on avail_in (the trailer keeps it nonzero until the end) */
            inflate_chunked(&c, wbits, Z_NO_FLUSH, 333, 1, data, size);
            inflate_chunked(&c, 47, Z_FINISH, 4096, 0, data, size);
        }
        append(&c, (const unsigned char *)"junk", 4);
        inflate_chunked(&c, wbits, Z_FINISH, size + 64, 0, data, size);
        c.len -= 4;
        if (c.len > 3) {
            c.len -= 3; /* cut */
            inflate_chunked(&c, wbits, Z_FINISH, size + 64, 0, data, size);
        }
        /* damage every inflater sees alike: zlib's header check, gzip's
         * magic, a raw stream's first block type (11: invalid) */
        if (wbits == 15)
            c.data[1] ^= 1;
        else if (wbits == 31)
            c.data[0] ^= 1;
        else
            c.data[0] |= 6;
        inflate_chunked(&c, wbits, Z_FINISH, size + 64, 0, data, size);
        free(c.data);
    }
}

/* The checksums on one buffer, from the initial values and others. */
static void checksums(const unsigned char *data, size_t size)
{
    printf("  crc32 %08lx %08lx %08lx adler32 %08lx %08lx %08lx\n",
           (unsigned long)crc32(0, data, (uInt)size), (unsigned long)crc32(0xdeadbeef, data, (uInt)size),
           (unsigned long)crc32_z(crc32(0, data, (uInt)(size / 3)), data + size / 3, size - size / 3),
           (unsigned long)adler32(1, data, (uInt)size), (unsigned long)adler32(0x12345678, data, (uInt)size),
           (unsigned long)adler32_z(adler32(1, data, (uInt)(size / 2)), data + size / 2, size - size / 2));
}

/* Under ISOLA_FALLBACK=error with isolad absent: the codes of the calls
 * that cannot run. */
static void failures(void)
{
    size_t size = 1 << 16;
    unsigned char *data = make_data(size, 0), *c = malloc(compressBound(size));
    uLongf len = compressBound(size), out_len = size;
    z_stream s;
    int rc;
    if (c == NULL)
        exit(2);
    memset(c, 0, len);
    printf("compress2 %d\n", compress2(c, &len, data, size, 6));
    printf("uncompress %d\n", uncompress(data, &out_len, c, len));
    memset(&s, 0, sizeof s);
    deflateInit(&s, 6);
    s.next_in = data;
    s.avail_in = (uInt)size;
    s.next_out = c;
    s.avail_out = (uInt)compressBound(size);
    rc = deflate(&s, Z_FINISH);
    printf("deflate %d %s\n", rc, s.msg ? s.msg : "");
    deflateEnd(&s);
    memset(&s, 0, sizeof s);
    inflateInit(&s);
    s.next_in = c;
    s.avail_in = (uInt)size;
    s.next_out = data;
    s.avail_out = (uInt)size;
    rc = inflate(&s, Z_FINISH);
    printf("inflate %d %s\n", rc, s.msg ? s.msg : "");
    inflateEnd(&s);
    printf("crc32 %08lx\n", (unsigned long)crc32(0, data, (uInt)size));
    free(data);
    free(c);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 100, 8193, 300000};
    if (argc > 1 && strcmp(argv[1], "fail") == 0) {
        failures();
        return 0;
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int kind = 0; kind < 2; kind++) {
            unsigned char *data = make_data(sizes[i], kind);
            printf("size %zu kind %d\n", sizes[i], kind);
            one_shot(data, sizes[i]);
            streams(data, sizes[i]);
            checksums(data, sizes[i]);
            free(data);
        }
    }
    return failed;
}
