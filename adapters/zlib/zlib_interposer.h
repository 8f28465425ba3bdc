/*
 * zlib_interposer.h: the pieces of the zlib interposer (libisola_zlib.so)
 * that its files share. Nothing here is exported from the library: the
 * only exported symbols are zlib's own functions (zlib.h's prototypes),
 * defined in deflate.c, inflate.c and checksum.c.
 *
 * The interposer is LD_PRELOADed under an unmodified program. A call it
 * can serve whole (a whole buffer compressed, decompressed or summed) of
 * at least a threshold's bytes becomes one task of the process's isolad
 * tenant (adapters/common/isola_adapter.h); every other call goes to the
 * real libz, found with dlsym(RTLD_NEXT, name). docs/applications.md says more.
 */
#ifndef ISOLA_ZLIB_INTERPOSER_H
#define ISOLA_ZLIB_INTERPOSER_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "isola_adapter.h"

/* Kept out of the library's dynamic symbol table. */
#define ZI_HIDDEN __attribute__((visibility("hidden")))

/* ---- the real libz (core.c) ---- */

/* The real libz's versions of the functions this library exports. */
typedef struct zi_real_fns {
    int (*compress2)(Bytef *, uLongf *, const Bytef *, uLong, int);
    uLong (*compressBound)(uLong);
    int (*uncompress2)(Bytef *, uLongf *, const Bytef *, uLong *);
    uLong (*crc32_z)(uLong, const Bytef *, z_size_t);
    uLong (*adler32_z)(uLong, const Bytef *, z_size_t);
    int (*deflateInit_)(z_streamp, int, const char *, int);
    int (*deflateInit2_)(z_streamp, int, int, int, int, int, const char *, int);
    int (*deflate)(z_streamp, int);
    int (*deflateEnd)(z_streamp);
    int (*deflateReset)(z_streamp);
    int (*deflateResetKeep)(z_streamp);
    int (*deflateParams)(z_streamp, int, int);
    int (*deflateSetDictionary)(z_streamp, const Bytef *, uInt);
    int (*deflatePrime)(z_streamp, int, int);
    int (*deflateSetHeader)(z_streamp, gz_headerp);
    int (*deflateTune)(z_streamp, int, int, int, int);
    int (*deflatePending)(z_streamp, unsigned *, int *);
    int (*deflateCopy)(z_streamp, z_streamp);
    uLong (*deflateBound)(z_streamp, uLong);
    int (*inflateInit_)(z_streamp, const char *, int);
    int (*inflateInit2_)(z_streamp, int, const char *, int);
    int (*inflate)(z_streamp, int);
    int (*inflateEnd)(z_streamp);
    int (*inflateReset)(z_streamp);
    int (*inflateReset2)(z_streamp, int);
    int (*inflateResetKeep)(z_streamp);
    int (*inflateSetDictionary)(z_streamp, const Bytef *, uInt);
    int (*inflateGetHeader)(z_streamp, gz_headerp);
    int (*inflatePrime)(z_streamp, int, int);
    int (*inflateCopy)(z_streamp, z_streamp);
} zi_real_fns;

/* The real functions, resolved once (thread-safely) on first use. */
ZI_HIDDEN const zi_real_fns *zi_real(void);

/* Nonzero while this thread is inside a real libz function or an offload:
 * libz calls its own exported functions through its PLT (compress2 calls
 * deflate, inflate calls crc32, ...), and those nested calls must reach
 * the real functions untouched. */
ZI_HIDDEN int zi_nested(void);
ZI_HIDDEN void zi_nest_enter(void);
ZI_HIDDEN void zi_nest_leave(void);

/* Calls the real libz's `name`, storing its answer in `result`, with
 * every zlib call it makes forwarded. */
#define ZI_CALL_REAL(result, name, ...)              \
    do {                                             \
        zi_nest_enter();                             \
        (result) = zi_real()->name(__VA_ARGS__);     \
        zi_nest_leave();                             \
    } while (0)

/* ---- output buffers (core.c) ---- */

/* A buffer of at least len bytes for an offloaded call's output, or NULL.
 * The process keeps one freed buffer (up to 64 MiB) for the next call:
 * its pages stay mapped, where a fresh buffer of this size is a fresh
 * mapping whose every page faults when the output is copied in. */
ZI_HIDDEN unsigned char *zi_buffer_alloc(size_t len);

/* Gives a buffer of zi_buffer_alloc back (NULL: nothing). */
ZI_HIDDEN void zi_buffer_free(unsigned char *buf);

/* ---- offloading (core.c) ---- */

/* The kinds of work, each with its own default threshold. */
typedef enum zi_work {
    ZI_WORK_COMPRESS = 0,   /* compress2, deflate */
    ZI_WORK_DECOMPRESS = 1, /* uncompress2, inflate */
    ZI_WORK_CRC32 = 2,
    ZI_WORK_ADLER32 = 3,
    ZI_WORKS = 4
} zi_work;

/* A stream's container, as zlib's windowBits chooses it. */
typedef enum zi_format {
    ZI_FORMAT_ZLIB = 0, /* windowBits 15 (inflate: also 0) */
    ZI_FORMAT_GZIP = 1, /* 16 + 15 */
    ZI_FORMAT_RAW = 2,  /* -15 */
    ZI_FORMAT_AUTO = 3, /* inflate only: 32 + 15, zlib or gzip by the magic */
    ZI_FORMAT_NONE = 4  /* any other windowBits: never offloaded */
} zi_format;

/* The format of a deflate (inflating = 0) or inflate (1) stream made with
 * `window_bits`: only the 32 KiB windows the operators use are offloaded. */
ZI_HIDDEN zi_format zi_format_of(int window_bits, int inflating);

/* Whether a call of `work` on `len` input bytes should be offloaded (at
 * or above the threshold: ISOLA_MIN_BYTES, or the measured default). */
ZI_HIDDEN int zi_worth_offloading(zi_work work, uint64_t len);

/* Counts a call kept in this process by choice (small, or a shape the
 * interposer does not offload). */
ZI_HIDDEN void zi_count_local(uint64_t len);

/* What an attempt to run a call on isolad came to. */
typedef enum zi_outcome {
    ZI_DONE = 0,      /* ran on isolad: *out_len bytes written over the pieces */
    ZI_TOO_LARGE = 1, /* ran, but the output needs *out_len bytes of room */
    ZI_REFUSED = 2,   /* the operator refused the input (corrupt, cut, junk after it, over a
                         limit): zlib's own answer comes from the real function */
    ZI_SOFTWARE = 3,  /* did not run on isolad (counted); run it in software */
    ZI_FAIL = 4       /* did not run on isolad and ISOLA_FALLBACK=error: fail the call */
} zi_outcome;

/* Where an offloaded compression or decompression goes: the caller's
 * buffer first, then, when rest_room > 0, a buffer of the interposer's own
 * for what does not fit there. */
typedef struct zi_output {
    unsigned char *dest;
    size_t dest_room;
    unsigned char *rest; /* zi_buffer_alloc'ed by zi_run_into; the caller's once ZI_DONE */
    size_t rest_room;
    size_t len; /* ZI_DONE: the output's length; ZI_TOO_LARGE: the room it needs */
} zi_output;

/* The one offload path of every stream and one-shot call: in[0..in_len)
 * compressed (ZI_WORK_COMPRESS: one stream of `format` at `level`, 0-9 or
 * -1) or decompressed (ZI_WORK_DECOMPRESS: exactly one whole stream of
 * `format`) into o. With `may_grow`, an output larger than o's room is
 * made again into room of the size isolad reported. o->rest is freed
 * unless ZI_DONE. */
ZI_HIDDEN zi_outcome zi_run_into(zi_work work, zi_format format, int level, const void *in,
                                 size_t in_len, zi_output *o, int may_grow);

/* Runs the checksum `work` (ZI_WORK_CRC32 or ZI_WORK_ADLER32, from its
 * initial value) of in[0..in_len) on isolad: 1 with *value, or 0. */
ZI_HIDDEN int zi_checksum_offload(zi_work work, const void *in, size_t in_len, uLong *value);

/* The message a stream call that fails under ISOLA_FALLBACK=error leaves
 * in strm->msg. */
ZI_HIDDEN extern char zi_fail_message[];

/* The code a one-shot call (compress2, uncompress2) returns then. */
#define ZI_FAIL_ONESHOT Z_MEM_ERROR
/* ... and a stream call (deflate, inflate), with strm->msg set. */
#define ZI_FAIL_STREAM Z_STREAM_ERROR

/* ---- streams' side state (streams.c) ---- */

/* Which of zlib's two stream kinds. */
typedef enum zi_kind { ZI_DEFLATER = 0, ZI_INFLATER = 1 } zi_kind;

/* Where a stream is. */
typedef enum zi_phase {
    ZI_FRESH = 0,     /* nothing since its init or reset: the real state is untouched */
    ZI_FORWARDED = 1, /* the real libz runs it (until a reset) */
    ZI_HANDING_OUT = 2, /* offloaded: its output is being handed out */
    ZI_ENDED = 3      /* offloaded and all handed out: the stream is at its end */
} zi_phase;

/* The interposer's side state of one z_stream, keyed by its address. */
typedef struct zi_stream {
    const z_stream *strm;          /* the key */
    const void *state;             /* strm->state when it was recorded: a mismatch means stale */
    zi_kind kind;
    int level;                     /* deflate: 0-9 */
    int window_bits;
    int mem_level;
    int strategy;
    int customised;                /* a dictionary, header, prime, tune or gz_header request since
                                      the last reset: not offloaded */
    zi_phase phase;
    /* ZI_HANDING_OUT and ZI_ENDED: */
    unsigned char *rest;           /* the output not yet handed out (rest[rest_pos..rest_len)) */
    size_t rest_len, rest_pos;
    uint64_t in_len, in_given;     /* the input, and how much of it was reported consumed */
    uint64_t out_len, out_given;   /* the whole output, and how much was handed out */
    uLong check;                   /* the stream's Adler-32 or CRC-32, for strm->adler */
    int has_check;
    struct zi_stream *next;        /* the table's chain */
} zi_stream;

/* Records a freshly initialised stream (replacing a stale record at the
 * same address). NULL if out of memory: the stream is then never offloaded. */
ZI_HIDDEN zi_stream *zi_stream_add(z_streamp strm, zi_kind kind, int level, int window_bits,
                                   int mem_level, int strategy);

/* The record of strm as a stream of `kind`, or NULL (none, another kind,
 * or stale: its real state is not the one recorded). */
ZI_HIDDEN zi_stream *zi_stream_find(const z_stream *strm, zi_kind kind);

/* Forgets strm (its End). */
ZI_HIDDEN void zi_stream_remove(const z_stream *strm);

/* Back to fresh after a reset: drops pending output, keeps the parameters. */
ZI_HIDDEN void zi_stream_restart(zi_stream *s);

/* Records dest as a copy of src (deflateCopy, inflateCopy). 0, or -1 if
 * out of memory. */
ZI_HIDDEN int zi_stream_copy(z_streamp dest, const zi_stream *src);

/* An offloaded call is done: its first `first` output bytes are already at
 * strm->next_out, the rest (rest_len bytes, a zi_buffer_alloc buffer the stream
 * now owns) waits in `rest`; in_len input bytes were the whole input.
 * Updates the stream's counters and pointers as zlib would. */
ZI_HIDDEN void zi_stream_take_over(z_streamp strm, zi_stream *s, size_t in_len, size_t first,
                                   unsigned char *rest, size_t rest_len, uLong check,
                                   int has_check);

/* Hands out what fits of the pending output; reports the input consumed
 * in proportion to the output handed out (all of it with the last byte).
 * The number of output bytes handed out. Ends the stream when all is out. */
ZI_HIDDEN size_t zi_stream_hand_out(z_streamp strm, zi_stream *s);

/* Reads byte `at` of the concatenation of the output pieces. */
ZI_HIDDEN unsigned char zi_piece_byte(const isola_out_piece *out, size_t n_out, size_t at);

#endif /* ISOLA_ZLIB_INTERPOSER_H */
