/*
 * core.c: the zlib interposer's plumbing: the real libz (dlsym RTLD_NEXT,
 * resolved once), the nesting guard, the process's adapter (made on first
 * use from the ISOLA_* environment), the thresholds, and the one offload
 * path every call takes to isolad.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlib_interposer.h"

/* ---- the real libz ---- */

static zi_real_fns zi_real_table;
static pthread_once_t zi_real_once = PTHREAD_ONCE_INIT;

/* The real `name` (the next definition after this library), or abort:
 * without it no call can be answered. */
static void *zi_resolve(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn == NULL) {
        fprintf(stderr, "libisola_zlib: the real libz's %s was not found (%s)\n", name,
                dlerror());
        abort();
    }
    return fn;
}

/* Fills the table of real functions (once). */
static void zi_resolve_all(void)
{
    zi_real_fns *r = &zi_real_table;
#define ZI_RESOLVE(name)                    \
    do {                                    \
        void *fn_ = zi_resolve(#name);      \
        memcpy(&r->name, &fn_, sizeof fn_); \
    } while (0)
    ZI_RESOLVE(compress2);
    ZI_RESOLVE(compressBound);
    ZI_RESOLVE(uncompress2);
    ZI_RESOLVE(crc32_z);
    ZI_RESOLVE(adler32_z);
    ZI_RESOLVE(deflateInit_);
    ZI_RESOLVE(deflateInit2_);
    ZI_RESOLVE(deflate);
    ZI_RESOLVE(deflateEnd);
    ZI_RESOLVE(deflateReset);
    ZI_RESOLVE(deflateResetKeep);
    ZI_RESOLVE(deflateParams);
    ZI_RESOLVE(deflateSetDictionary);
    ZI_RESOLVE(deflatePrime);
    ZI_RESOLVE(deflateSetHeader);
    ZI_RESOLVE(deflateTune);
    ZI_RESOLVE(deflatePending);
    ZI_RESOLVE(deflateCopy);
    ZI_RESOLVE(deflateBound);
    ZI_RESOLVE(inflateInit_);
    ZI_RESOLVE(inflateInit2_);
    ZI_RESOLVE(inflate);
    ZI_RESOLVE(inflateEnd);
    ZI_RESOLVE(inflateReset);
    ZI_RESOLVE(inflateReset2);
    ZI_RESOLVE(inflateResetKeep);
    ZI_RESOLVE(inflateSetDictionary);
    ZI_RESOLVE(inflateGetHeader);
    ZI_RESOLVE(inflatePrime);
    ZI_RESOLVE(inflateCopy);
#undef ZI_RESOLVE
}

/* The real functions (resolved on first use). */
const zi_real_fns *zi_real(void)
{
    pthread_once(&zi_real_once, zi_resolve_all);
    return &zi_real_table;
}

/* ---- the nesting guard ---- */

/* How deep this thread is inside real libz functions and offloads. */
static _Thread_local unsigned zi_depth;

/* Whether this thread is inside a real function or an offload. */
int zi_nested(void)
{
    return zi_depth != 0;
}

/* Enters a real function or an offload. */
void zi_nest_enter(void)
{
    zi_depth++;
}

/* Leaves it. */
void zi_nest_leave(void)
{
    zi_depth--;
}

/* ---- output buffers ---- */

/* A buffer's header: its capacity, before the bytes (16 bytes keep them aligned). */
typedef struct zi_buffer_header {
    size_t cap;
    size_t pad;
} zi_buffer_header;

/* The largest buffer kept for reuse. */
#define ZI_SPARE_MAX ((size_t)64 << 20)

/* The one buffer kept (its header), or NULL. */
static _Atomic(zi_buffer_header *) zi_spare;

/* A buffer of at least len bytes (the kept one if it is large enough). */
unsigned char *zi_buffer_alloc(size_t len)
{
    zi_buffer_header *h = atomic_exchange(&zi_spare, NULL);
    if (h != NULL && h->cap < len) {
        free(h);
        h = NULL;
    }
    if (h == NULL) {
        if (len > SIZE_MAX - sizeof *h)
            return NULL;
        h = malloc(sizeof *h + len);
        if (h == NULL)
            return NULL;
        h->cap = len;
    }
    return (unsigned char *)(h + 1);
}

/* Keeps buf for the next call (freeing the one kept before), or frees it. */
void zi_buffer_free(unsigned char *buf)
{
    zi_buffer_header *h;
    if (buf == NULL)
        return;
    h = (zi_buffer_header *)buf - 1;
    if (h->cap > ZI_SPARE_MAX) {
        free(h);
        return;
    }
    free(atomic_exchange(&zi_spare, h));
}

/* ---- the adapter and the thresholds ---- */

/*
 * The default thresholds, in input bytes, of each kind of work: below
 * them the round trip to isolad costs more than the work. The crossovers
 * measured on this project's 2-core build machine against a release
 * isolad (docs/perf.md, "Unmodified applications", has the figures and the commands);
 * ISOLA_MIN_BYTES overrides them all.
 */
static const uint64_t zi_default_min_bytes[ZI_WORKS] = {
    [ZI_WORK_COMPRESS] = 20 << 10,   /* Python's zlib.compress: 1.32x at 16 KiB, 0.94x at 20 KiB */
    [ZI_WORK_DECOMPRESS] = 8 << 10,  /* compressed input: 1.05x at 7.3 KiB, 0.91x at 8.7 KiB */
    [ZI_WORK_CRC32] = 384 << 10,     /* 1.41x at 256 KiB, 0.97x at 384 KiB */
    [ZI_WORK_ADLER32] = 256 << 10,   /* 1.20x at 192 KiB, 0.88x at 256 KiB */
};

static isola_adapter *zi_the_adapter;
static int64_t zi_min_bytes_setting = -1;
static isola_fallback_mode zi_fallback_setting = ISOLA_FALLBACK_SOFTWARE;
static pthread_once_t zi_adapter_once = PTHREAD_ONCE_INIT;

char zi_fail_message[] = "isolad could not run the call and ISOLA_FALLBACK=error";

/* Makes the process's adapter from the environment (once). A setting it
 * cannot read is reported on stderr and the adapter runs everything in
 * software (no tenant). */
static void zi_make_adapter(void)
{
    isola_adapter_config cfg;
    char err[512];
    isola_adapter_config_init(&cfg);
    if (isola_adapter_config_env(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "libisola_zlib: %s; every zlib call runs in software\n", err);
        isola_adapter_config_init(&cfg);
        cfg.tenant[0] = '\0';
    }
    zi_min_bytes_setting = cfg.min_bytes;
    zi_fallback_setting = cfg.fallback;
    zi_the_adapter = isola_adapter_new("zlib", &cfg);
}

/* The process's adapter (made on first use), or NULL if out of memory. */
static isola_adapter *zi_adapter(void)
{
    pthread_once(&zi_adapter_once, zi_make_adapter);
    return zi_the_adapter;
}

/* Whether a call of `work` on `len` input bytes should be offloaded (never
 * an empty input: a task's input is at least a byte). */
int zi_worth_offloading(zi_work work, uint64_t len)
{
    if (len == 0 || zi_adapter() == NULL)
        return 0;
    if (zi_min_bytes_setting >= 0)
        return len >= (uint64_t)zi_min_bytes_setting;
    return len >= zi_default_min_bytes[work];
}

/* Counts a call kept local by choice. */
void zi_count_local(uint64_t len)
{
    isola_adapter *a = zi_adapter();
    if (a != NULL)
        isola_adapter_count_local(a, len);
}

/* The format of a stream made with `window_bits` (see the header). */
zi_format zi_format_of(int window_bits, int inflating)
{
    switch (window_bits) {
    case MAX_WBITS:
        return ZI_FORMAT_ZLIB;
    case -MAX_WBITS:
        return ZI_FORMAT_RAW;
    case 16 + MAX_WBITS:
        return ZI_FORMAT_GZIP;
    case 32 + MAX_WBITS:
        return inflating ? ZI_FORMAT_AUTO : ZI_FORMAT_NONE;
    case 0:
        /* inflate: the window the zlib header names, whatever it is */
        return inflating ? ZI_FORMAT_ZLIB : ZI_FORMAT_NONE;
    default:
        return ZI_FORMAT_NONE;
    }
}

/* The `format` parameter's value for f. */
static const char *zi_format_name(zi_format f)
{
    static const char *const names[] = {"zlib", "gzip", "raw", "auto"};
    return f < ZI_FORMAT_NONE ? names[f] : "zlib";
}

/* Runs `op` with `params` on one input over the output pieces (empty
 * pieces left out), inside the nesting guard, and says what came of it. */
static zi_outcome zi_offload(const char *op, const isola_param *params, size_t n_params,
                             const void *in, size_t in_len, const isola_out_piece *out,
                             size_t n_out, size_t *out_len)
{
    isola_adapter *a = zi_adapter();
    isola_in_piece input = {in, in_len};
    isola_out_piece pieces[4];
    size_t n = 0;
    isola_run_result result;
    isola_run_status status;

    if (a == NULL)
        return ZI_SOFTWARE;
    for (size_t i = 0; i < n_out && n < sizeof pieces / sizeof pieces[0]; i++)
        if (out[i].len > 0)
            pieces[n++] = out[i];
    memset(&result, 0, sizeof result);
    zi_nest_enter();
    status = isola_adapter_run(a, op, params, n_params, &input, in_len > 0 ? 1 : 0, pieces, n,
                               &result);
    zi_nest_leave();
    switch (status) {
    case ISOLA_RUN_DONE:
        *out_len = result.output_len;
        return ZI_DONE;
    case ISOLA_RUN_OP_FAILED:
        *out_len = result.output_len;
        return result.detail == ISOLA_FAILED_OUTPUT_TOO_LARGE ? ZI_TOO_LARGE : ZI_REFUSED;
    case ISOLA_RUN_FALLBACK:
    default:
        if (result.reason == ISOLA_FALLBACK_UNCONFIGURED ||
            zi_fallback_setting == ISOLA_FALLBACK_SOFTWARE)
            return ZI_SOFTWARE;
        return ZI_FAIL;
    }
}

/* The most output one decompression task may make on isolad (the
 * operators' default; larger streams are decoded in software). */
#define ZI_MAX_OUTPUT "256MiB"

/* Runs one compression or decompression over o's pieces. */
static zi_outcome zi_run_once(zi_work work, zi_format format, int level, const void *in,
                              size_t in_len, const zi_output *o, size_t *out_len)
{
    static const char *const levels[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    isola_out_piece pieces[2] = {{o->dest, o->dest_room}, {o->rest, o->rest_room}};
    isola_param params[2] = {{"format", zi_format_name(format)}, {"level", levels[6]}};
    if (work == ZI_WORK_COMPRESS) {
        if (level >= 0 && level <= 9)
            params[1].value = levels[level];
        return zi_offload("zlib-compress", params, 2, in, in_len, pieces, 2, out_len);
    }
    params[1].key = "max_output";
    params[1].value = ZI_MAX_OUTPUT;
    return zi_offload("zlib-decompress", params, 2, in, in_len, pieces, 2, out_len);
}

/* The one offload path (see the header). */
zi_outcome zi_run_into(zi_work work, zi_format format, int level, const void *in, size_t in_len,
                       zi_output *o, int may_grow)
{
    for (int attempt = 0;; attempt++) {
        zi_outcome r;
        o->rest = NULL;
        if (o->rest_room > 0) {
            o->rest = zi_buffer_alloc(o->rest_room);
            if (o->rest == NULL)
                return ZI_SOFTWARE;
        }
        r = zi_run_once(work, format, level, in, in_len, o, &o->len);
        if (r == ZI_DONE)
            return r;
        zi_buffer_free(o->rest);
        o->rest = NULL;
        if (r != ZI_TOO_LARGE || !may_grow || attempt > 0 || o->len <= o->dest_room + o->rest_room)
            return r;
        o->rest_room = o->len - o->dest_room;
    }
}

/* A checksum of one whole input from its initial value (crc32, adler32). */
int zi_checksum_offload(zi_work work, const void *in, size_t in_len, uLong *value)
{
    unsigned char be[4];
    isola_out_piece out = {be, sizeof be};
    size_t len = 0;
    const char *op = work == ZI_WORK_CRC32 ? "crc32" : "adler32";
    if (zi_offload(op, NULL, 0, in, in_len, &out, 1, &len) != ZI_DONE || len != sizeof be)
        return 0;
    *value = ((uLong)be[0] << 24) | ((uLong)be[1] << 16) | ((uLong)be[2] << 8) | (uLong)be[3];
    return 1;
}
